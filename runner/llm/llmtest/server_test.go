package llmtest_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

func client(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), MaxRetries: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// conversation drives a client the way the loop does: it appends each
// answer and answers every tool call with result.
type conversation struct {
	t   *testing.T
	c   *llm.Client
	req llm.Request
}

func newConversation(t *testing.T, srv *llmtest.Server) *conversation {
	return &conversation{t: t, c: client(t, srv), req: llm.Request{
		Model:    "m",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "fix it"}},
	}}
}

func (cv *conversation) next() (llm.Response, error) {
	resp, err := cv.c.Complete(cv.t.Context(), cv.req)
	if err == nil {
		cv.req.Messages = append(cv.req.Messages, resp.Message)
	}
	return resp, err
}

func (cv *conversation) answer(result string) {
	last := cv.req.Messages[len(cv.req.Messages)-1]
	for _, tc := range last.ToolCalls {
		cv.req.Messages = append(cv.req.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: result})
	}
}

func (cv *conversation) mustCall(name string) llm.ToolCall {
	cv.t.Helper()
	resp, err := cv.next()
	if err != nil {
		cv.t.Fatal(err)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0].Name != name {
		cv.t.Fatalf("answer = %+v, want one call of %s", resp.Message, name)
	}
	return resp.Message.ToolCalls[0]
}

func TestRulesAndSteps(t *testing.T) {
	call := func(name string) []llmtest.Call { return []llmtest.Call{{Name: name, Arguments: "{}"}} }
	srv := llmtest.NewServer(t, llmtest.Script{
		Steps: []llmtest.Step{
			{ToolCalls: call("edit_file")},
			{ToolCalls: call("run_checks")},
			{ToolCalls: call("finish")},
		},
		Rules: []llmtest.Rule{
			{Contains: "no such file", Times: 1, Step: llmtest.Step{ToolCalls: call("list_files")}},
			{Regexp: `--- FAIL: Test\w+`, Step: llmtest.Step{ToolCalls: call("read_file")}},
		},
	})
	cv := newConversation(t, srv)
	cv.mustCall("edit_file")
	cv.answer("open x.go: no such file")
	cv.mustCall("list_files") // the rule
	cv.answer("open x.go: no such file")
	cv.mustCall("run_checks") // the rule is used up: the next step
	cv.answer("--- FAIL: TestAdd (0.00s)")
	cv.mustCall("read_file") // regexp rule, without limit
	cv.answer("--- FAIL: TestSub (0.00s)")
	cv.mustCall("read_file")
	if srv.Pending() != 1 {
		t.Errorf("Pending = %d, want 1", srv.Pending())
	}
	cv.answer("ok")
	cv.mustCall("finish")
	if srv.Pending() != 0 {
		t.Errorf("Pending = %d, want 0", srv.Pending())
	}
	cv.answer("accepted")
	if _, err := cv.next(); err == nil || !strings.Contains(err.Error(), "script exhausted") {
		t.Errorf("err = %v, want script exhausted", err)
	}
	if n := len(srv.Requests()); n != 7 {
		t.Errorf("recorded %d requests, want 7", n)
	}
}

// Rules look only at the tool results a request ends with, not at older
// ones or at the user's text.
func TestRulesIgnoreOlderMessages(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{
		Steps: []llmtest.Step{{Text: "step"}, {Text: "step"}},
		Rules: []llmtest.Rule{{Contains: "FAIL", Step: llmtest.Step{Text: "rule"}}},
	})
	c := client(t, srv)
	req := llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "tests FAIL"}}}
	resp, err := c.Complete(t.Context(), req)
	if err != nil || resp.Message.Content != "step" {
		t.Fatalf("answer to a user message = %q, %v; want the step", resp.Message.Content, err)
	}
	req.Messages = []llm.Message{
		{Role: llm.RoleUser, Content: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "run_checks", Arguments: "{}"}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "FAIL"},
		{Role: llm.RoleAssistant, Content: "I see."},
		{Role: llm.RoleUser, Content: "go on"},
	}
	resp, err = c.Complete(t.Context(), req)
	if err != nil || resp.Message.Content != "step" {
		t.Fatalf("answer after an older tool result = %q, %v; want the step", resp.Message.Content, err)
	}
}

func TestFaultHeaders(t *testing.T) {
	tests := []struct {
		retryAfter    time.Duration
		wantSeconds   string
		wantMillisecs string
	}{
		{2 * time.Second, "2", ""},
		{1500 * time.Millisecond, "2", "1500"},
		{0, "", ""},
	}
	for _, tt := range tests {
		srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Status: 429, RetryAfter: tt.retryAfter}}})
		res, body := post(t, srv, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
		if res.StatusCode != 429 || res.Header.Get("Retry-After") != tt.wantSeconds || res.Header.Get("Retry-After-Ms") != tt.wantMillisecs {
			t.Errorf("retry after %v: status %d, Retry-After %q, Retry-After-Ms %q", tt.retryAfter, res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Retry-After-Ms"))
		}
		if msg := errorMessage(t, body); msg != "llmtest: injected 429 Too Many Requests" {
			t.Errorf("error message = %q", msg)
		}
	}
}

// The server refuses what the real API refuses, so a loop that loses or
// invents a tool_call_id fails its tests instead of passing against a
// lenient fake.
func TestProtocolRefusals(t *testing.T) {
	assistant := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	tests := []struct {
		name, body, wantErr string
	}{
		{"not JSON", `{"model":`, "decode request"},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`, "model is required"},
		{"no messages", `{"model":"m","messages":[]}`, "messages must not be empty"},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`, `messages[0]: unknown role "robot"`},
		{"tool not a function", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"custom"}]}`, "tools[0]"},
		{"result for an unknown call", `{"model":"m","messages":[{"role":"user","content":"hi"},` + assistant + `,{"role":"tool","tool_call_id":"c9","content":"x"}]}`, `messages[2]: tool message answers "c9"`},
		{"a call left unanswered", `{"model":"m","messages":[{"role":"user","content":"hi"},` + assistant + `,{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"user","content":"?"}]}`, "messages[3]: tool calls [c2] have no tool result"},
		{"conversation ends with open calls", `{"model":"m","messages":[{"role":"user","content":"hi"},` + assistant + `]}`, "tool calls [c1 c2] have no tool result"},
		{"same call answered twice", `{"model":"m","messages":[{"role":"user","content":"hi"},` + assistant + `,{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`, `messages[3]: tool message answers "c1"`},
		{"empty assistant message", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null}]}`, "messages[1]: assistant message needs content or tool_calls"},
		{"tool message without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "tool message without tool_call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "unused"}}})
			res, body := post(t, srv, tt.body)
			if msg := errorMessage(t, body); res.StatusCode != http.StatusBadRequest || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("answer = %d %q, want 400 containing %q", res.StatusCode, msg, tt.wantErr)
			}
			if srv.Pending() != 1 {
				t.Error("a refused request used up a step")
			}
		})
	}
}

// Content arrives as a string, null, or an array of text parts; all decode
// to the same text.
func TestContentForms(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "ok"}}})
	res, body := post(t, srv, `{"model":"m","messages":[
		{"role":"system","content":"sys"},
		{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"result"}]}`)
	if res.StatusCode != 200 {
		t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	got := srv.Requests()[0].Messages
	want := []llm.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "ab"},
		{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c1", Content: "result"},
	}
	gotJSON, _ := json.Marshal(got)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("messages = %s\nwant %s", gotJSON, wantJSON)
	}
}

func TestUsage(t *testing.T) {
	set := llmtest.Usage{PromptTokens: 100, CachedTokens: 60, CompletionTokens: 7}
	srv := llmtest.NewServer(t, llmtest.Script{
		Usage: set,
		Steps: []llmtest.Step{{Text: "a"}, {Text: "b", Usage: &llmtest.Usage{PromptTokens: 1, CompletionTokens: 2}}},
	})
	cv := newConversation(t, srv)
	for _, want := range []llm.Usage{
		{PromptTokens: 100, CachedTokens: 60, CompletionTokens: 7},
		{PromptTokens: 1, CompletionTokens: 2},
	} {
		resp, err := cv.next()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != want {
			t.Errorf("usage = %+v, want %+v", resp.Usage, want)
		}
		cv.req.Messages = append(cv.req.Messages, llm.Message{Role: llm.RoleUser, Content: "more"})
	}
}

// Without counts in the script, usage grows with the conversation and the
// shared prefix of consecutive requests counts as cached.
func TestEstimatedUsage(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "first"}, {Text: "second"}}})
	cv := newConversation(t, srv)
	first, err := cv.next()
	if err != nil {
		t.Fatal(err)
	}
	cv.req.Messages = append(cv.req.Messages, llm.Message{Role: llm.RoleUser, Content: strings.Repeat("more context ", 100)})
	second, err := cv.next()
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.PromptTokens <= 0 || first.Usage.CachedTokens != 0 || first.Usage.CompletionTokens <= 0 {
		t.Errorf("first usage = %+v, want prompt and completion tokens and nothing cached", first.Usage)
	}
	if second.Usage.PromptTokens <= first.Usage.PromptTokens+300 {
		t.Errorf("second prompt = %d tokens, want over %d: it carries 1300 more bytes", second.Usage.PromptTokens, first.Usage.PromptTokens+300)
	}
	if c := second.Usage.CachedTokens; c <= 0 || c >= second.Usage.PromptTokens {
		t.Errorf("second cached = %d of %d, want the shared prefix", c, second.Usage.PromptTokens)
	}
}

func TestDelayGivesUpWithTheClient(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "late", Delay: time.Hour}}})
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), MaxRetries: -1, Timeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err == nil {
		t.Fatal("a delayed answer arrived before the timeout")
	}
	// Close, from the test's cleanup, must not wait out the hour.
}

func post(t *testing.T, srv *llmtest.Server, body string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, b
}

// errorMessage returns the message of an OpenAI-style error body.
func errorMessage(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error.Message
}
