package llmtest_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// serveEndpoint serves models and returns a client of the endpoint.
func serveEndpoint(t *testing.T, models map[string]llmtest.Script) *llm.Client {
	t.Helper()
	e, err := llmtest.NewEndpoint(models)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL + "/v1", MaxRetries: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func talk(t *testing.T, c *llm.Client, model string) *conversation {
	return &conversation{t: t, c: c, req: llm.Request{Model: model, Messages: []llm.Message{{Role: llm.RoleUser, Content: "fix it"}}}}
}

// Two sessions of one model, interleaved, each get the whole script; the
// model a request names picks its script.
func TestEndpointAnswersEachConversationFromItsOwnScript(t *testing.T) {
	t.Parallel()
	call := func(name string) []llmtest.Call { return []llmtest.Call{{Name: name, Arguments: "{}"}} }
	c := serveEndpoint(t, map[string]llmtest.Script{
		"pagination": {Steps: []llmtest.Step{{ToolCalls: call("read_file")}, {ToolCalls: call("finish")}},
			Rules: []llmtest.Rule{{Contains: "FAIL", Times: 1, Step: llmtest.Step{ToolCalls: call("run_checks")}}}},
		"rounding": {Steps: []llmtest.Step{{ToolCalls: call("edit_file")}, {ToolCalls: call("finish")}}},
	})
	a, b, r := talk(t, c, "pagination"), talk(t, c, "pagination"), talk(t, c, "rounding")
	a.mustCall("read_file")
	b.mustCall("read_file")
	r.mustCall("edit_file")
	a.answer("--- FAIL: TestPages")
	a.mustCall("run_checks") // a's rule
	b.answer("--- FAIL: TestPages")
	b.mustCall("run_checks") // b's own use of it
	a.answer("ok")
	a.mustCall("finish")
	r.answer("ok")
	r.mustCall("finish")
	b.answer("ok")
	b.mustCall("finish")
	b.answer("accepted")
	if _, err := b.next(); err == nil || !strings.Contains(err.Error(), "script exhausted") {
		t.Errorf("a finished session's next request: %v; want its script exhausted", err)
	}
	if _, err := talk(t, c, "gpt-4.1").next(); err == nil || !strings.Contains(err.Error(), "serves pagination, rounding") {
		t.Errorf("a model the endpoint does not serve: %v; want the models it does named", err)
	}
}

// A lone script answers whatever model is named; a fault is answered like
// a real one and the retry continues the session; a history the endpoint
// never answered is refused rather than answered from a wrong step.
func TestEndpointLoneScriptFaultsAndStrangers(t *testing.T) {
	t.Parallel()
	c := serveEndpoint(t, map[string]llmtest.Script{"any": {Steps: []llmtest.Step{
		{Status: 503}, {Text: "first"}, {Text: "second"},
	}}})
	cv := talk(t, c, "gpt-4.1")
	if _, err := cv.next(); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("the scripted fault: %v", err)
	}
	if resp, err := cv.next(); err != nil || resp.Message.Content != "first" {
		t.Fatalf("the retry: %q, %v; want the next step", resp.Message.Content, err)
	}
	cv.req.Messages = append(cv.req.Messages, llm.Message{Role: llm.RoleUser, Content: "and?"})
	if resp, err := cv.next(); err != nil || resp.Message.Content != "second" {
		t.Fatalf("the session's next request: %q, %v", resp.Message.Content, err)
	}
	stranger := talk(t, c, "gpt-4.1")
	stranger.req.Messages = append(stranger.req.Messages, llm.Message{Role: llm.RoleAssistant, Content: "digest of earlier work"},
		llm.Message{Role: llm.RoleUser, Content: "go on"})
	if _, err := stranger.next(); err == nil || !strings.Contains(err.Error(), "continues no conversation") {
		t.Errorf("a history the endpoint never answered: %v; want it refused", err)
	}
}
