package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

var readFile = llm.Tool{
	Name:        "read_file",
	Description: "Read a file of the repository.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
}

// newClient returns a client of srv whose retries wait at most a few
// milliseconds, so that retry tests count requests without slowing down.
func newClient(t testing.TB, srv *llmtest.Server, cfg llm.Config) *llm.Client {
	t.Helper()
	cfg.BaseURL = srv.URL()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxRetryDelay == 0 {
		cfg.MaxRetryDelay = 20 * time.Millisecond
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userRequest(text string) llm.Request {
	return llm.Request{
		Model:    "test-model",
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You fix bugs."}, {Role: llm.RoleUser, Content: text}},
		Tools:    []llm.Tool{readFile},
	}
}

func TestRoundTrip(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{
		{Text: "Reading both.", ToolCalls: []llmtest.Call{
			{Name: "read_file", Arguments: `{"path":"a.go"}`},
			{ID: "call_b", Name: "read_file", Arguments: `{"path":"b.go"}`},
		}},
		{Text: "They look fine."},
	}})
	c := newClient(t, srv, llm.Config{APIKey: "sk-test"})
	ctx := t.Context()

	req := userRequest("Fix the bug.")
	req.MaxTokens = 512
	resp, err := c.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Role != llm.RoleAssistant || resp.Message.Content != "Reading both." || resp.FinishReason != "tool_calls" {
		t.Errorf("first answer = %+v", resp)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].Name != "read_file" || calls[0].Arguments != `{"path":"a.go"}` || calls[0].ID == "" || calls[1].ID != "call_b" {
		t.Fatalf("tool calls = %+v", calls)
	}

	req.Messages = append(req.Messages, resp.Message,
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[1].ID, Content: "package b"},
		llm.Message{Role: llm.RoleTool, ToolCallID: calls[0].ID, Content: "package a"},
	)
	resp, err = c.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "They look fine." || len(resp.Message.ToolCalls) != 0 || resp.FinishReason != "stop" {
		t.Errorf("second answer = %+v", resp)
	}

	got := srv.Requests()
	if len(got) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(got))
	}
	first := got[0]
	if first.Model != "test-model" || first.MaxTokens != 512 || first.Header.Get("Authorization") != "Bearer sk-test" {
		t.Errorf("first request: model %q, max tokens %d, auth %q", first.Model, first.MaxTokens, first.Header.Get("Authorization"))
	}
	if !slices.Equal(first.ToolNames(), []string{"read_file"}) || first.Tools[0].Description != readFile.Description {
		t.Errorf("tools offered = %+v", first.Tools)
	}
	var schema map[string]any
	if err := json.Unmarshal(first.Tools[0].Parameters, &schema); err != nil || schema["required"].([]any)[0] != "path" {
		t.Errorf("tool schema arrived as %s (%v)", first.Tools[0].Parameters, err)
	}
	second := got[1]
	if len(second.Messages) != 5 {
		t.Fatalf("second request has %d messages, want 5", len(second.Messages))
	}
	if sent := second.Messages[2]; sent.Role != llm.RoleAssistant || len(sent.ToolCalls) != 2 || sent.ToolCalls[0] != calls[0] {
		t.Errorf("assistant message sent back as %+v", sent)
	}
	results := second.ToolResults()
	if len(results) != 2 || results[0].ToolCallID != "call_b" || results[0].Content != "package b" || results[1].ToolCallID != calls[0].ID {
		t.Errorf("tool results sent back as %+v", results)
	}
}

// TestTemperature: a temperature is sent when set, 0 included, and
// absent when nil, leaving the endpoint's default.
func TestTemperature(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "a"}, {Text: "b"}, {Text: "c"}}})
	c := newClient(t, srv, llm.Config{})
	for _, temp := range []*float64{new(0.7), new(0.0), nil} {
		req := userRequest("Fix the bug.")
		req.Temperature = temp
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	got := srv.Requests()
	if len(got) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(got))
	}
	for i, want := range []*float64{new(0.7), new(0.0), nil} {
		if sent := got[i].Temperature; (sent == nil) != (want == nil) || sent != nil && *sent != *want {
			t.Errorf("request %d: temperature %v, want %v", i, ptrString(sent), ptrString(want))
		}
	}
}

func ptrString(f *float64) string {
	if f == nil {
		return "none"
	}
	return fmt.Sprint(*f)
}

func TestMalformedArgumentsAndUnknownToolsPassThrough(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{
			{Name: "read_file", Arguments: `{"path": "a.go"`},
			{Name: "rm_rf", Arguments: `{}`},
		}},
	}})
	resp, err := newClient(t, srv, llm.Config{}).Complete(t.Context(), userRequest("go"))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].Arguments != `{"path": "a.go"` || calls[1].Name != "rm_rf" {
		t.Errorf("tool calls = %+v", calls)
	}
}

func TestRetries(t *testing.T) {
	ok := llmtest.Step{Text: "ok"}
	tests := []struct {
		name       string
		steps      []llmtest.Step
		maxRetries int
		wantErr    string // empty for success
		wantStatus int
		wantReqs   int
	}{
		{
			name:     "429 with Retry-After then success",
			steps:    []llmtest.Step{{Status: 429, RetryAfter: 5 * time.Millisecond}, ok},
			wantReqs: 2,
		},
		{
			name:     "500 retried",
			steps:    []llmtest.Step{{Status: 500}, {Status: 503}, ok},
			wantReqs: 3,
		},
		{
			name:       "retries bounded",
			steps:      []llmtest.Step{{Status: 500}, {Status: 500}, {Status: 500}, ok},
			maxRetries: 2,
			wantErr:    "injected 500",
			wantStatus: 500,
			wantReqs:   3,
		},
		{
			name:       "negative MaxRetries never retries",
			steps:      []llmtest.Step{{Status: 502}, ok},
			maxRetries: -1,
			wantStatus: 502,
			wantErr:    "injected 502",
			wantReqs:   1,
		},
		{
			// The client may wait at most 20ms: a server asking for an hour
			// is answered at once with its own refusal, not hammered.
			name:       "Retry-After beyond the cap is honoured by not retrying",
			steps:      []llmtest.Step{{Status: 429, RetryAfter: time.Hour, Error: "Rate limit reached"}, ok},
			wantStatus: 429,
			wantErr:    "Rate limit reached (server asks to retry after 3600s)",
			wantReqs:   1,
		},
		{
			name:       "400 is not retried",
			steps:      []llmtest.Step{{Status: 400, Error: "context too long"}, ok},
			wantStatus: 400,
			wantErr:    "context too long",
			wantReqs:   1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Script{Steps: tt.steps})
			resp, err := newClient(t, srv, llm.Config{MaxRetries: tt.maxRetries}).Complete(t.Context(), userRequest("go"))
			if n := len(srv.Requests()); n != tt.wantReqs {
				t.Errorf("server saw %d requests, want %d", n, tt.wantReqs)
			}
			if tt.wantErr == "" {
				if err != nil || resp.Message.Content != "ok" {
					t.Fatalf("Complete = %+v, %v; want ok", resp, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
			if apiErr, ok := errors.AsType[*openai.Error](err); !ok || apiErr.StatusCode != tt.wantStatus {
				t.Errorf("err = %v, want an API error with status %d", err, tt.wantStatus)
			}
		})
	}
}

func TestMalformedAnswers(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{"no choices", `{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[]}`, "has no choices"},
		{"not JSON", `<html>bad gateway</html>`, "chat completion test-model"},
		{"custom tool call", `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","tool_calls":[{"id":"x","type":"custom","custom":{"name":"n","input":"i"}}]}}]}`, `type "custom"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Body: tt.body}}})
			_, err := newClient(t, srv, llm.Config{}).Complete(t.Context(), userRequest("go"))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestMissingToolCallIDIsFilledIn(t *testing.T) {
	body := `{"id":"chatcmpl-7","model":"m","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"read_file","arguments":"{}"}},{"type":"function","function":{"name":"read_file","arguments":"{}"}}]}}]}`
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Body: body}}})
	resp, err := newClient(t, srv, llm.Config{}).Complete(t.Context(), userRequest("go"))
	if err != nil {
		t.Fatal(err)
	}
	calls := resp.Message.ToolCalls
	if len(calls) != 2 || calls[0].ID == "" || calls[0].ID == calls[1].ID {
		t.Errorf("tool call ids = %q, %q; want distinct, non-empty", calls[0].ID, calls[1].ID)
	}
}

func TestBadRequestsAreRefusedBeforeSending(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "unused"}}})
	c := newClient(t, srv, llm.Config{})
	tool := func(params string) llm.Tool { return llm.Tool{Name: "t", Parameters: json.RawMessage(params)} }
	tests := []struct {
		name    string
		req     llm.Request
		wantErr string
	}{
		{"no model", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}, "no model"},
		{"no messages", llm.Request{Model: "m"}, "no messages"},
		{"unknown role", llm.Request{Model: "m", Messages: []llm.Message{{Role: "narrator", Content: "x"}}}, `unknown role "narrator"`},
		{"tool message without id", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleTool, Content: "x"}}}, "without a tool call id"},
		{"schema not JSON", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{tool(`{"type":`)}}, "tool t: parameters"},
		{"schema not an object", llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}, Tools: []llm.Tool{tool(`[1]`)}}, "tool t: parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Complete(t.Context(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server saw %d requests, want none", n)
	}
}

func TestScriptExhaustedIsAClearError(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "only answer"}}})
	c := newClient(t, srv, llm.Config{})
	if _, err := c.Complete(t.Context(), userRequest("one")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Complete(t.Context(), userRequest("two"))
	if err == nil || !strings.Contains(err.Error(), "script exhausted: request 2 matched no rule and all 1 steps are used") {
		t.Fatalf("err = %v, want a script-exhausted error", err)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2 (exhaustion is not retried)", n)
	}
}

func TestContextCancellation(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "late", Delay: time.Minute}, {Text: "never"}}})
	c := newClient(t, srv, llm.Config{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, userRequest("go"))
		done <- err
	}()
	for len(srv.Requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1 (a cancelled call is not retried)", n)
	}
}

func TestAttemptTimeout(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "late", Delay: time.Minute}}})
	c := newClient(t, srv, llm.Config{Timeout: 20 * time.Millisecond})
	_, err := c.Complete(t.Context(), userRequest("go"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
}

func TestUsageAndCost(t *testing.T) {
	prices := map[string]llm.Price{
		"test-model":     {Input: 2, CachedInput: 0.5, Output: 8},
		"dated-2026-001": {Input: 1, Output: 1},
	}
	usage := &llmtest.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000, CompletionTokens: 250_000}
	tests := []struct {
		name         string
		model        string
		body         string // a raw answer, for a server-side model name
		wantCost     float64
		wantUnpriced bool
	}{
		// 600k uncached at $2, 400k cached at $0.5, 250k out at $8.
		{name: "priced with cached tokens", model: "test-model", wantCost: 1.2 + 0.2 + 2},
		{name: "unknown model costs nothing and is flagged", model: "mystery", wantCost: 0, wantUnpriced: true},
		{
			name: "priced by the model that answered", model: "alias",
			body:     `{"id":"c","model":"dated-2026-001","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":1000000,"completion_tokens":250000,"total_tokens":1250000,"prompt_tokens_details":{"cached_tokens":400000}}}`,
			wantCost: 1 + 0.25, // no cached price: cached tokens cost the input price
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step := llmtest.Step{Text: "hi", Usage: usage}
			if tt.body != "" {
				step = llmtest.Step{Body: tt.body}
			}
			srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{step}})
			req := userRequest("go")
			req.Model = tt.model
			resp, err := newClient(t, srv, llm.Config{Prices: prices}).Complete(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := llm.Usage{PromptTokens: 1_000_000, CachedTokens: 400_000, CompletionTokens: 250_000, CostUSD: tt.wantCost}
			if d := resp.Usage.CostUSD - want.CostUSD; d > 1e-9 || d < -1e-9 {
				t.Errorf("cost = %v, want %v", resp.Usage.CostUSD, want.CostUSD)
			}
			resp.Usage.CostUSD = want.CostUSD
			if resp.Usage != want || resp.Unpriced != tt.wantUnpriced {
				t.Errorf("usage = %+v unpriced %v; want %+v unpriced %v", resp.Usage, resp.Unpriced, want, tt.wantUnpriced)
			}
		})
	}
}

func TestNewRefusesBadBaseURL(t *testing.T) {
	for _, base := range []string{"localhost:8080", "ftp://models/v1", "http://", "://x"} {
		if _, err := llm.New(llm.Config{BaseURL: base}); err == nil {
			t.Errorf("New(BaseURL %q) succeeded, want an error", base)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := llm.ConfigFromEnv(env(map[string]string{
		"AGENTBOT_LLM_BASE_URL":    "http://vllm:8000/v1",
		"AGENTBOT_LLM_API_KEY":     "k",
		"AGENTBOT_LLM_TIMEOUT":     "90s",
		"AGENTBOT_LLM_MAX_RETRIES": "-1",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseURL != "http://vllm:8000/v1" || cfg.APIKey != "k" || cfg.Timeout != 90*time.Second || cfg.MaxRetries != -1 {
		t.Errorf("cfg = %+v", cfg)
	}
	for _, bad := range []map[string]string{
		{"AGENTBOT_LLM_TIMEOUT": "soon"},
		{"AGENTBOT_LLM_TIMEOUT": "-1s"},
		{"AGENTBOT_LLM_MAX_RETRIES": "many"},
	} {
		if _, err := llm.ConfigFromEnv(env(bad)); err == nil {
			t.Errorf("ConfigFromEnv(%v) succeeded, want an error", bad)
		}
	}
}

// Gaps that make budgets blind are logged once per model, not on every
// call of a long loop.
func TestGapsLoggedOnce(t *testing.T) {
	noUsage := `{"id":"c","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"}}]}`
	tests := []struct {
		name    string
		steps   []llmtest.Step
		prices  map[string]llm.Price
		wantLog string
	}{
		{"model without a price", []llmtest.Step{{Text: "a"}, {Text: "b"}}, nil, "no price for model"},
		{"server without usage", []llmtest.Step{{Body: noUsage}, {Body: noUsage}}, map[string]llm.Price{"test-model": {Input: 1}}, "reports no usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged strings.Builder
			srv := llmtest.NewServer(t, llmtest.Script{Steps: tt.steps})
			c := newClient(t, srv, llm.Config{Prices: tt.prices, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			for range 2 {
				if _, err := c.Complete(t.Context(), userRequest("go")); err != nil {
					t.Fatal(err)
				}
			}
			if n := strings.Count(logged.String(), tt.wantLog); n != 1 || strings.Count(logged.String(), "\n") != 1 {
				t.Errorf("logged %q %d times, want once and nothing else:\n%s", tt.wantLog, n, logged.String())
			}
		})
	}
}

// An empty assistant answer goes back as empty text: an assistant message
// with neither content nor tool calls is refused by the API.
func TestEmptyAnswerSentBack(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Script{Steps: []llmtest.Step{{Text: "ok"}}})
	req := userRequest("go")
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant}, llm.Message{Role: llm.RoleUser, Content: "Say something."})
	if _, err := newClient(t, srv, llm.Config{}).Complete(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if sent := srv.Requests()[0].Messages[2]; sent.Role != llm.RoleAssistant || sent.Content != "" {
		t.Errorf("empty answer sent back as %+v", sent)
	}
}

func BenchmarkComplete(b *testing.B) {
	srv := llmtest.NewServer(b, llmtest.Script{Rules: []llmtest.Rule{{
		Regexp: ".", Step: llmtest.Step{ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"a.go"}`}}},
	}}})
	c := newClient(b, srv, llm.Config{HTTPClient: &http.Client{}})
	req := userRequest("Fix the bug.")
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: strings.Repeat("package a\n", 200)},
	)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Complete(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
