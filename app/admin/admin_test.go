package admin

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

// source is a Source over fixed tasks and traces.
type source struct {
	tasks  []Task
	traces map[string][]app.TraceEvent
	err    error
}

func (s source) Tasks(context.Context, int) ([]Task, error) { return s.tasks, s.err }

func (s source) Task(_ context.Context, id string) (Task, error) {
	for _, t := range s.tasks {
		if t.ID == id {
			return t, nil
		}
	}
	return Task{}, app.Errorf(app.ENotFound, "There is no task %q.", id)
}

func (s source) Trace(_ context.Context, id string) ([]app.TraceEvent, error) {
	if ev, ok := s.traces[id]; ok {
		return ev, nil
	}
	return nil, app.Errorf(app.ENotFound, "There is no trace of task %q.", id)
}

func sampleSource() source {
	t0 := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	return source{
		tasks: []Task{
			{Task: app.Task{ID: "t1", Repo: "octo/hello", Number: 4, Verb: app.VerbFix, Requester: "alice", ReceivedAt: t0}, State: app.StateSucceeded, UpdatedAt: t0.Add(time.Minute)},
			{Task: app.Task{ID: "t2", Repo: "octo/hello", Number: 5, IsPR: true, Verb: app.VerbFix, Requester: "bob", ReceivedAt: t0}, State: app.StateRunning, Step: "step 3"},
		},
		traces: map[string][]app.TraceEvent{"t1": {
			{Time: t0, Kind: app.TraceModelCall, Step: 1, Name: "plugsky-coder", Duration: 2 * time.Second, PromptTokens: 900, CompletionTokens: 40, Cost: 0.0021, Outcome: "ok"},
			{Time: t0.Add(3 * time.Second), Kind: app.TraceToolCall, Step: 1, Name: "patch", Args: `{"path":"<script>alert(1)</script>"}`, Outcome: "ok"},
			{Time: t0.Add(4 * time.Second), Kind: app.TraceCheck, Step: 2, Name: "test", Outcome: "passed", Detail: "go test ./..."},
		}},
	}
}

func get(t *testing.T, h http.Handler, path, auth string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:8081"
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

func TestPages(t *testing.T) {
	t.Parallel()
	h := NewHandler(Config{Source: sampleSource()})
	cases := []struct {
		path   string
		code   int
		has    []string
		hasNot []string
	}{
		{"/", 200, []string{`<a href="/tasks/t1">t1</a>`, "octo/hello#5 (PR)", "running · step 3", "alice"}, nil},
		{"/tasks/t1", 200, []string{"plugsky-coder", "900 tokens in, 40 out, $0.0021", "1 passed, 0 failed", "go test ./...", "trace.jsonl",
			"&lt;script&gt;alert(1)&lt;/script&gt;"}, []string{"<script>alert"}},
		{"/tasks/t2", 200, []string{"No trace recorded for this task."}, nil},
		{"/tasks/none", 404, []string{`There is no task "none".`}, nil},
		{"/tasks/t1/trace.jsonl", 200, []string{`"kind":"model_call"`, `"name":"test"`}, nil},
		{"/tasks/t2/trace.jsonl", 404, nil, nil},
		{"/nothing/here", 404, nil, nil},
	}
	for _, c := range cases {
		code, body := get(t, h, c.path, "")
		if code != c.code {
			t.Errorf("GET %s: %d, want %d\n%s", c.path, code, c.code, body)
		}
		for _, s := range c.has {
			if !strings.Contains(body, s) {
				t.Errorf("GET %s lacks %q:\n%s", c.path, s, body)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(body, s) {
				t.Errorf("GET %s contains %q", c.path, s)
			}
		}
	}
}

func TestPagesHideInternalErrors(t *testing.T) {
	t.Parallel()
	src := sampleSource()
	src.err = errors.New("dial tcp 10.0.0.7:6379: connection refused")
	code, body := get(t, NewHandler(Config{Source: src}), "/", "")
	if code != 500 || strings.Contains(body, "10.0.0.7") {
		t.Errorf("GET / with Redis down: %d %q", code, body)
	}
}

func TestTokenIsRequiredWhenSet(t *testing.T) {
	t.Parallel()
	h := NewHandler(Config{Source: sampleSource(), Token: "s3cret"})
	for _, auth := range []string{"", "Bearer wrong", "s3cret", "Basic s3cret", "Bearer s3cret "} {
		for _, path := range []string{"/", "/tasks/t1", "/tasks/t1/trace.jsonl"} {
			if code, body := get(t, h, path, auth); code != 401 || strings.Contains(body, "octo/hello") {
				t.Errorf("GET %s with %q: %d, want 401 and nothing shown", path, auth, code)
			}
		}
	}
	if code, body := get(t, h, "/tasks/t1", "Bearer s3cret"); code != 200 || !strings.Contains(body, "plugsky-coder") {
		t.Errorf("GET with the token: %d\n%s", code, body)
	}
}

// TestHostMustBeThisServer asks for the pages over HTTP under the names a
// DNS-rebinding page would send: without a token, only the configured host
// and loopback names are served; with one, the token decides.
func TestHostMustBeThisServer(t *testing.T) {
	t.Parallel()
	open := httptest.NewServer(NewHandler(Config{Source: sampleSource(), Addr: "admin.internal:8081"}))
	defer open.Close()
	tokened := httptest.NewServer(NewHandler(Config{Source: sampleSource(), Addr: "0.0.0.0:8081", Token: "s3cret"}))
	defer tokened.Close()
	fetch := func(srv *httptest.Server, host, auth string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/tasks/t1", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK && strings.Contains(string(body), "octo/hello") {
			t.Errorf("Host %q: refused with %d but shows the task", host, resp.StatusCode)
		}
		return resp.StatusCode
	}
	cases := []struct {
		host string
		code int
	}{
		{"127.0.0.1:8081", 200},
		{"127.0.0.1", 200},
		{"127.1.2.3:9", 200},
		{"[::1]:8081", 200},
		{"localhost:8081", 200},
		{"LocalHost.", 200},
		{"admin.internal:8081", 200},
		{"ADMIN.internal", 200},
		{"rebind.example:8081", 421},
		{"rebind.example", 421},
		{"localhost.rebind.example", 421},
		{"127.0.0.1.nip.io", 421},
		{"admin.internal.rebind.example", 421},
		{"10.0.0.7:8081", 421},
	}
	for _, c := range cases {
		if code := fetch(open, c.host, ""); code != c.code {
			t.Errorf("Host %q without a token: %d; want %d", c.host, code, c.code)
		}
	}
	if code := fetch(tokened, "rebind.example", "Bearer s3cret"); code != 200 {
		t.Errorf("any Host with the token: %d; want 200", code)
	}
	if code := fetch(tokened, "rebind.example", ""); code != 401 {
		t.Errorf("any Host without the token: %d; want 401", code)
	}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:8081", "", true},
		{"[::1]:8081", "", true},
		{"localhost:8081", "", true},
		{"0.0.0.0:8081", "", false},
		{":8081", "", false},
		{"10.1.2.3:8081", "", false},
		{"0.0.0.0:8081", "s3cret", true},
		{":8081", "s3cret", true},
		{"127.0.0.1", "", false},
		{"", "s3cret", false},
	}
	for _, c := range cases {
		err := CheckAddr(c.addr, c.token)
		if (err == nil) != c.ok || (err != nil && app.ErrorCode(err) != app.EInvalid) {
			t.Errorf("CheckAddr(%q, token %v) = %v, want ok %v", c.addr, c.token != "", err, c.ok)
		}
	}
}
