package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbot/agentbot/runner/llm"
)

// maxRequestBytes bounds a request body; real providers refuse far less.
const maxRequestBytes = 64 << 20

// Server is a scripted model on the chat-completions wire protocol.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	steps    []Step
	rules    []Rule
	ruleUses []int
	usage    Usage
	next     int // index of the next unused step
	requests []Request
	prevBody []byte // the last request body, for the cached-token estimate
}

// Request is one request the server received, decoded.
type Request struct {
	Model     string
	Messages  []llm.Message
	Tools     []llm.Tool
	MaxTokens int
	// Temperature is the one sent; nil when the request had none.
	Temperature *float64
	Header      http.Header
}

// ToolNames returns the names of the tools the request offered.
func (r Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// ToolResults returns the tool messages the request ends with: the results
// of the previous answer's tool calls.
func (r Request) ToolResults() []llm.Message {
	i := len(r.Messages)
	for i > 0 && r.Messages[i-1].Role == llm.RoleTool {
		i--
	}
	return r.Messages[i:]
}

// TB is the part of testing.TB that NewServer uses. Naming it here rather
// than importing testing keeps the testing package out of agentbot-demo,
// which serves scripts.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// NewServer starts a server for the test and closes it when the test ends.
// An invalid script fails the test.
func NewServer(t TB, s Script) *Server {
	t.Helper()
	srv, err := Start(s)
	if err != nil {
		t.Fatalf("llmtest: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// Start checks the script and starts a server answering from it on a
// loopback port. The caller closes it.
func Start(s Script) (*Server, error) {
	srv, err := newServer(s)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc(completionsRoute, srv.complete)
	srv.srv = httptest.NewServer(mux)
	return srv, nil
}

// completionsRoute is the one route of the chat-completions protocol a
// scripted model serves.
const completionsRoute = "POST /v1/chat/completions"

// newServer checks the script and returns its answering state, serving
// nothing yet.
func newServer(s Script) (*Server, error) {
	rules := slices.Clone(s.Rules) // compiling must not touch the caller's script
	s.Rules = rules
	if err := s.compile(); err != nil {
		return nil, fmt.Errorf("model script: %w", err)
	}
	return &Server{
		steps:    slices.Clone(s.Steps),
		rules:    rules,
		ruleUses: make([]int, len(rules)),
		usage:    s.Usage,
	}, nil
}

// URL is the base URL a client is configured with; it ends in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns every request received so far, faults included.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Pending returns how many steps have not been answered yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.steps) - s.next
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request) {
	req, body, ok := readRequest(w, r)
	if ok {
		s.answer(w, r, req, body)
	}
}

// readRequest reads and decodes a request, answering a 400 itself when it
// is not one the real API would take.
func readRequest(w http.ResponseWriter, r *http.Request) (Request, []byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("read request: %v", err))
		return Request{}, nil, false
	}
	req, err := decodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return Request{}, nil, false
	}
	req.Header = r.Header.Clone()
	return req, body, true
}

// answer answers req from the script and returns the assistant message it
// sent, if it sent a completion.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req Request, body []byte) (llm.Message, bool) {
	s.mu.Lock()
	n := len(s.requests) + 1
	s.requests = append(s.requests, req)
	step, ok := s.choose(req)
	cached := commonPrefix(s.prevBody, body)
	s.prevBody = body
	s.mu.Unlock()

	if !ok {
		writeError(w, http.StatusBadRequest, "script_exhausted",
			fmt.Sprintf("llmtest: script exhausted: request %d matched no rule and all %d steps are used", n, len(s.steps)))
		return llm.Message{}, false
	}
	if step.Delay > 0 {
		select {
		case <-time.After(step.Delay):
		case <-r.Context().Done():
			return llm.Message{}, false
		}
	}
	switch {
	case step.Status != 0:
		if step.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(step.RetryAfter.Seconds())), 10))
			if step.RetryAfter%time.Second != 0 {
				w.Header().Set("Retry-After-Ms", strconv.FormatInt(step.RetryAfter.Milliseconds(), 10))
			}
		}
		msg := step.Error
		if msg == "" {
			msg = fmt.Sprintf("llmtest: injected %d %s", step.Status, http.StatusText(step.Status))
		}
		writeError(w, step.Status, "llmtest_fault", msg)
	case step.Body != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, step.Body)
	default:
		c := s.completion(n, req, step, len(body), cached)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
		m, err := c.Choices[0].Message.decode()
		return m, err == nil
	}
	return llm.Message{}, false
}

// choose picks the answer to req: the first matching rule with uses left,
// else the next step. s.mu is held.
func (s *Server) choose(req Request) (Step, bool) {
	if results := req.ToolResults(); len(results) > 0 {
		texts := make([]string, len(results))
		for i, m := range results {
			texts[i] = m.Content
		}
		joined := strings.Join(texts, "\n")
		for i := range s.rules {
			r := &s.rules[i]
			if (r.Times == 0 || s.ruleUses[i] < r.Times) && r.matches(joined) {
				s.ruleUses[i]++
				return r.Step, true
			}
		}
	}
	if s.next >= len(s.steps) {
		return Step{}, false
	}
	s.next++
	return s.steps[s.next-1], true
}

func (s *Server) completion(n int, req Request, step Step, promptBytes, cachedBytes int) wireCompletion {
	msg := wireMessage{Role: llm.RoleAssistant}
	answerBytes := len(step.Text)
	if step.Text != "" {
		msg.Content, _ = json.Marshal(step.Text)
	}
	for i, c := range step.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n, i+1)
		}
		tc := wireToolCall{ID: id, Type: "function"}
		tc.Function.Name = c.Name
		tc.Function.Arguments = string(c.Arguments)
		msg.ToolCalls = append(msg.ToolCalls, tc)
		answerBytes += len(c.Name) + len(c.Arguments)
	}
	finish := step.FinishReason
	if finish == "" {
		finish = "stop"
		if len(step.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := s.usage
	if step.Usage != nil {
		usage = *step.Usage
	}
	if usage == (Usage{}) {
		usage = Usage{
			PromptTokens:     int64(promptBytes / 4),
			CachedTokens:     int64(cachedBytes / 4),
			CompletionTokens: int64(answerBytes/4 + 1),
		}
	}
	c := wireCompletion{
		ID:      fmt.Sprintf("chatcmpl-llmtest-%d", n),
		Object:  "chat.completion",
		Created: time.Now().Unix(),
		Model:   req.Model,
		Choices: []wireChoice{{Message: msg, FinishReason: finish}},
	}
	c.Usage.PromptTokens = usage.PromptTokens
	c.Usage.CompletionTokens = usage.CompletionTokens
	c.Usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	c.Usage.PromptTokensDetails.CachedTokens = usage.CachedTokens
	return c
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	body.Error.Message = msg
	body.Error.Type = typ
	body.Error.Code = typ
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decodeRequest decodes a chat-completions request and refuses what the
// real API refuses: no model, no messages, unknown roles, tools that are not
// functions, empty assistant messages, and tool messages that answer no
// pending tool call.
func decodeRequest(body []byte) (Request, error) {
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		return Request{}, fmt.Errorf("decode request: %w", err)
	}
	if wr.Model == "" {
		return Request{}, errors.New("model is required")
	}
	if len(wr.Messages) == 0 {
		return Request{}, errors.New("messages must not be empty")
	}
	req := Request{Model: wr.Model, MaxTokens: max(wr.MaxTokens, wr.MaxCompletionTokens), Temperature: wr.Temperature}
	for i, t := range wr.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return Request{}, fmt.Errorf("tools[%d]: want a function with a name", i)
		}
		req.Tools = append(req.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	pending := map[string]bool{} // tool calls of the last assistant message not yet answered
	for i, wm := range wr.Messages {
		m, err := wm.decode()
		if err != nil {
			return Request{}, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if m.Role == llm.RoleTool {
			if !pending[m.ToolCallID] {
				return Request{}, fmt.Errorf("messages[%d]: tool message answers %q, which is not a pending tool call of the preceding assistant message", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		} else if len(pending) > 0 {
			return Request{}, fmt.Errorf("messages[%d]: tool calls %v have no tool result", i, slices.Sorted(maps.Keys(pending)))
		}
		for _, tc := range m.ToolCalls {
			pending[tc.ID] = true
		}
		req.Messages = append(req.Messages, m)
	}
	if len(pending) > 0 {
		return Request{}, fmt.Errorf("tool calls %v have no tool result", slices.Sorted(maps.Keys(pending)))
	}
	return req, nil
}

type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Tools               []wireTool    `json:"tools"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Temperature         *float64      `json:"temperature"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// decode turns a wire message into an llm.Message. Content may be null, a
// string, or an array of text parts.
func (wm wireMessage) decode() (llm.Message, error) {
	switch wm.Role {
	case llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool, "developer":
	default:
		return llm.Message{}, fmt.Errorf("unknown role %q", wm.Role)
	}
	m := llm.Message{Role: wm.Role, ToolCallID: wm.ToolCallID}
	content := strings.TrimSpace(string(wm.Content))
	switch {
	case content == "" || content == "null":
	case strings.HasPrefix(content, "["):
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if err := json.Unmarshal(wm.Content, &parts); err != nil {
			return llm.Message{}, fmt.Errorf("content: %w", err)
		}
		for _, p := range parts {
			switch p.Type {
			case "text":
				m.Content += p.Text
			case "image_url":
				im, err := decodeDataURL(p.ImageURL.URL)
				if err != nil {
					return llm.Message{}, fmt.Errorf("content: image_url: %w", err)
				}
				m.Images = append(m.Images, im)
			default:
				return llm.Message{}, fmt.Errorf("content: unknown part type %q", p.Type)
			}
		}
	default:
		if err := json.Unmarshal(wm.Content, &m.Content); err != nil {
			return llm.Message{}, fmt.Errorf("content: %w", err)
		}
	}
	for _, tc := range wm.ToolCalls {
		if tc.ID == "" {
			return llm.Message{}, errors.New("tool call without an id")
		}
		m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if wm.Role == llm.RoleAssistant && (content == "" || content == "null") && len(wm.ToolCalls) == 0 {
		return llm.Message{}, errors.New("assistant message needs content or tool_calls")
	}
	if wm.Role == llm.RoleTool && wm.ToolCallID == "" {
		return llm.Message{}, errors.New("tool message without tool_call_id")
	}
	return m, nil
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

type wireChoice struct {
	Index        int         `json:"index"`
	Message      wireMessage `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

// decodeDataURL reads an image sent inline as data:TYPE;base64,DATA; a
// model server cannot fetch other URLs here.
func decodeDataURL(u string) (llm.Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return llm.Image{}, fmt.Errorf("%.40q is not a data URL", u)
	}
	mediaType, data, ok := strings.Cut(rest, ";base64,")
	if !ok || !strings.HasPrefix(mediaType, "image/") {
		return llm.Image{}, errors.New("want a data:image/TYPE;base64,DATA URL")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return llm.Image{}, fmt.Errorf("image data: %w", err)
	}
	return llm.Image{MediaType: mediaType, Data: b}, nil
}
