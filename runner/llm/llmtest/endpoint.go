package llmtest

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/agentbot/agentbot/runner/llm"
)

// Endpoint serves scripts the way a model provider serves models, so that
// a program reaches it as it reaches a real one, through its base URL:
// the model a request names picks its script (a lone script answers any
// name), and every conversation is answered from a fresh copy of it. A
// request continues the conversation whose messages, answers included,
// it repeats; one that starts with no assistant message starts a new one.
// Runs of one task at once therefore each get the whole script, where a
// Server would deal its steps out among them.
//
// A conversation whose history the client rewrites (a digest of old
// context) continues none and is refused: scripts replay short sessions.
type Endpoint struct {
	models map[string]Script

	mu    sync.Mutex
	convs []*conversation
}

// conversation is one client's session with a script.
type conversation struct {
	model string
	state *Server
	// seen are the messages of its last request and the answer to it:
	// what the next request of the same session starts with.
	seen []llm.Message
	// busy while a request of it is being answered: another request
	// repeating the same messages then is another session's.
	busy bool
}

// NewEndpoint checks every script. models names them; with one, its name
// does not matter.
func NewEndpoint(models map[string]Script) (*Endpoint, error) {
	if len(models) == 0 {
		return nil, errors.New("llmtest: an endpoint needs a script")
	}
	for name, s := range models {
		if _, err := newServer(s); err != nil {
			return nil, fmt.Errorf("model %s: %w", name, err)
		}
	}
	return &Endpoint{models: models}, nil
}

// Handler serves the chat-completions route under /v1, the base URL's
// path.
func (e *Endpoint) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(completionsRoute, e.complete)
	return mux
}

func (e *Endpoint) complete(w http.ResponseWriter, r *http.Request) {
	req, body, ok := readRequest(w, r)
	if !ok {
		return
	}
	c, err := e.conversation(req)
	if err != nil {
		writeError(w, http.StatusNotFound, "model_not_found", err.Error())
		return
	}
	if c == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error",
			"llmtest: the request continues no conversation of this endpoint: its history is not one the endpoint answered")
		return
	}
	answer, ok := c.state.answer(w, r, req, body)
	e.mu.Lock()
	defer e.mu.Unlock()
	c.seen, c.busy = req.Messages, false
	if ok {
		c.seen = append(slices.Clip(c.seen), answer)
	}
}

// conversation returns the idle conversation req continues, the longest
// if several do, else a new one when req starts one, else nil; it is
// marked busy. An error says the model is not served.
func (e *Endpoint) conversation(req Request) (*conversation, error) {
	model, script, err := e.script(req.Model)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var best *conversation
	for _, c := range e.convs {
		if c.model == model && !c.busy && continues(req.Messages, c.seen) && (best == nil || len(c.seen) > len(best.seen)) {
			best = c
		}
	}
	if best == nil {
		if slices.ContainsFunc(req.Messages, func(m llm.Message) bool { return m.Role == llm.RoleAssistant }) {
			return nil, nil
		}
		state, err := newServer(script)
		if err != nil {
			return nil, err // checked by NewEndpoint
		}
		best = &conversation{model: model, state: state}
		e.convs = append(e.convs, best)
	}
	best.busy = true
	return best, nil
}

// script is the script that answers the model named.
func (e *Endpoint) script(name string) (string, Script, error) {
	if len(e.models) == 1 {
		for n, s := range e.models {
			return n, s, nil
		}
	}
	s, ok := e.models[name]
	if !ok {
		return "", Script{}, fmt.Errorf("llmtest: the model %q does not exist; this endpoint serves %s",
			name, strings.Join(slices.Sorted(maps.Keys(e.models)), ", "))
	}
	return name, s, nil
}

// continues tells whether msgs starts with seen.
func continues(msgs, seen []llm.Message) bool {
	return len(seen) <= len(msgs) && slices.EqualFunc(seen, msgs[:len(seen)], sameMessage)
}

func sameMessage(a, b llm.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls) &&
		slices.EqualFunc(a.Images, b.Images, func(x, y llm.Image) bool { return x.MediaType == y.MediaType && string(x.Data) == string(y.Data) })
}
