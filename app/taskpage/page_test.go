package taskpage_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/taskpage"
)

var (
	secret  = []byte("0123456789abcdef0123456789abcdef-page")
	rotated = []byte("fedcba9876543210fedcba9876543210-page")
	now     = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
)

func signer(t *testing.T, s []byte) *taskpage.Signer {
	t.Helper()
	sg, err := taskpage.NewSigner(s)
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

func TestSignerRefusesShortSecrets(t *testing.T) {
	if _, err := taskpage.NewSigner([]byte("short")); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("a 5-byte secret: %v, want refused", err)
	}
}

func TestTokenIsValidOnlyForItsTaskUntilItExpires(t *testing.T) {
	sg := signer(t, secret)
	tok := sg.Token("d-1", now.Add(time.Hour))
	if !sg.Valid("d-1", tok, now) {
		t.Fatal("a fresh token of its own task is refused")
	}
	exp, mac, _ := strings.Cut(tok, ".")
	flipped := []byte(mac)
	flipped[3] ^= 1
	for name, c := range map[string]struct {
		id, token string
		at        time.Time
		by        *taskpage.Signer
	}{
		"expired":        {"d-1", tok, now.Add(time.Hour), sg},
		"other task":     {"d-2", tok, now, sg},
		"rotated secret": {"d-1", tok, now, signer(t, rotated)},
		"wrong mac":      {"d-1", exp + "." + string(flipped), now, sg},
		"later expiry":   {"d-1", "zzzzzz." + mac, now, sg},
		"no dot":         {"d-1", exp + mac, now, sg},
		"empty":          {"d-1", "", now, sg},
		"padded expiry":  {"d-1", "0" + tok, now, sg},
		"prefix id":      {"d-", tok, now, sg},
	} {
		if c.by.Valid(c.id, c.token, c.at) {
			t.Errorf("%s: token accepted", name)
		}
	}
}

type source map[string]taskpage.Page

func (s source) Page(_ context.Context, id string) (taskpage.Page, error) {
	p, ok := s[id]
	if !ok {
		return taskpage.Page{}, app.Errorf(app.ENotFound, "There is no task %q.", id)
	}
	return p, nil
}

const hostile = `</pre><script>alert(1)</script><img src=x onerror=alert(2)>`

func pages() source {
	task := app.Task{ID: "d-1", Repo: "octo/hello", Number: 7, Verb: app.VerbFix, Requester: "alice",
		Instructions: "fix it " + hostile, ReceivedAt: now.Add(-time.Minute)}
	return source{
		"d-1": {Task: task, State: app.StateRunning, Step: "step 2: run_checks", UpdatedAt: now,
			Events: []app.TraceEvent{
				{Time: now, Kind: app.TraceModelCall, Step: 1, Name: "plugsky-coder", Outcome: "ok", PromptTokens: 1800, CompletionTokens: 120, Cost: 0.0042},
				{Time: now, Kind: app.TraceToolCall, Step: 1, Name: "read_file", Outcome: "ok", Args: `{"path":"stats.go"}`,
					Result: "token ghs_abcdefghijklmnopqrstuvwxyz0123456789 and " + string(secret) + " " + hostile},
				{Time: now, Kind: app.TraceCheck, Step: 2, Name: "test", Outcome: "failed", Detail: "go test ./..."},
			},
			Loops: []taskpage.Loop{{Said: []string{"I will read stats.go " + hostile}, Diff: "--- a/stats.go\n+++ b/stats.go\n-x\n+y " + hostile,
				Checks: []taskpage.Check{{Name: "test", ExitCode: 1, Output: "FAIL TestSum\nAuthorization: Bearer sekr1t-value"}}}},
		},
		"d-2": {Task: app.Task{ID: "d-2", Repo: "octo/other", Requester: "mallory"}, State: app.StateSucceeded},
	}
}

func serve(t *testing.T, src taskpage.Source, sg *taskpage.Signer) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(taskpage.NewHandler(taskpage.Config{Signer: sg, Source: src, Now: func() time.Time { return now }}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestPageShowsTheTaskEscapedAndMasked(t *testing.T) {
	sg := signer(t, secret)
	srv := serve(t, pages(), sg)
	resp, body := get(t, srv.URL+taskpage.Path("d-1", sg.Token("d-1", now.Add(time.Hour))))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{"Task d-1", "octo/hello#7", "@alice", "step 2: run_checks", "1800 tokens in, 120 out", "$0.0042",
		"I will read stats.go &lt;/pre&gt;&lt;script&gt;", "FAIL TestSum", "--- a/stats.go", `http-equiv="refresh"`, "read_file"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, leak := range []string{"<script>alert", "<img src=x", "ghs_abcdefghij", string(secret), "sekr1t-value", "octo/other", "mallory"} {
		if strings.Contains(body, leak) {
			t.Errorf("the page shows %q", leak)
		}
	}
	for k, want := range map[string]string{"Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Frame-Options": "DENY"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q", csp)
	}

	// The page as the script fetches it again: unchanged, not resent.
	again, _ := get(t, srv.URL+taskpage.Path("d-1", sg.Token("d-1", now.Add(time.Hour))), "If-None-Match", resp.Header.Get("ETag"))
	if again.StatusCode != http.StatusNotModified {
		t.Errorf("fetched again unchanged: %d, want 304", again.StatusCode)
	}
}

func TestFinalPageStopsRefreshing(t *testing.T) {
	src := pages()
	p := src["d-1"]
	p.State, p.Step, p.Outcome = app.StateSucceeded, "succeeded", &app.TaskOutcome{State: app.StateSucceeded, PR: 9, ChecksPassed: true}
	src["d-1"] = p
	sg := signer(t, secret)
	_, body := get(t, serve(t, src, sg).URL+taskpage.Path("d-1", sg.Token("d-1", now.Add(time.Hour))))
	if strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, `data-final="true"`) || !strings.Contains(body, "pull request #9; the checks passed") {
		t.Errorf("final page:\n%s", body)
	}
}

// TestRefusalsLookAlike: a wrong, expired or rotated token, and a token of
// a task that is gone, answer the same 404, naming nothing.
func TestRefusalsLookAlike(t *testing.T) {
	sg := signer(t, secret)
	srv := serve(t, pages(), sg)
	paths := map[string]string{
		"wrong token":    taskpage.Path("d-1", "abc.def"),
		"expired":        taskpage.Path("d-1", sg.Token("d-1", now.Add(-time.Second))),
		"other task":     taskpage.Path("d-2", sg.Token("d-1", now.Add(time.Hour))),
		"rotated secret": taskpage.Path("d-1", signer(t, rotated).Token("d-1", now.Add(time.Hour))),
		"gone":           taskpage.Path("d-9", sg.Token("d-9", now.Add(time.Hour))),
		"no token":       "/live/d-1",
		"extra segment":  taskpage.Path("d-1", sg.Token("d-1", now.Add(time.Hour))) + "/x",
	}
	var first string
	for name, path := range paths {
		resp, body := get(t, srv.URL+path)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "octo") {
			t.Errorf("%s: %d, %d bytes; want 404 naming nothing", name, resp.StatusCode, len(body))
		}
		if first == "" {
			first = body
		} else if body != first {
			t.Errorf("%s: %.80q, unlike another refusal", name, body)
		}
	}
}

func TestLinksExpireWithTheTrace(t *testing.T) {
	sg := signer(t, secret)
	l := taskpage.Links{Base: "https://agentbot.example.com", Signer: sg, TTL: 24 * time.Hour}
	task := app.Task{ID: "d-1", ReceivedAt: now}
	u := l.URL(task)
	tok := u[strings.LastIndex(u, "/")+1:]
	if !strings.HasPrefix(u, "https://agentbot.example.com/live/d-1/") || !sg.Valid("d-1", tok, now.Add(23*time.Hour)) || sg.Valid("d-1", tok, now.Add(24*time.Hour)) {
		t.Errorf("link %s: want valid for the trace's 24h from the task's arrival", u)
	}
	if u != l.URL(task) {
		t.Error("the link changes between calls: every edit of the status comment would change it")
	}
}

func TestParseBase(t *testing.T) {
	for raw, want := range map[string]string{"https://a.example/": "https://a.example", "http://127.0.0.1:8080": "http://127.0.0.1:8080", "https://a.example/bot": "https://a.example/bot"} {
		if got, err := taskpage.ParseBase(raw); err != nil || got != want {
			t.Errorf("ParseBase(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "a.example", "ftp://a.example", "https://a.example/?x=1", "https://u:p@a.example", "https://a.example/#f"} {
		if _, err := taskpage.ParseBase(raw); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("ParseBase(%q): %v, want refused", raw, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"ghp_0123456789abcdefghijABCDEFGHIJ0123":                               "[redacted]",
		"github_pat_11ABCDEFG0123456789_abcdefghijklmnop":                      "[redacted]",
		"Authorization: Bearer abc.def":                                        "Authorization: [redacted]",
		"https://x-access-token:ghs_zz@github.com/o/r.git":                     "https://[redacted]@github.com/o/r.git",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----": "[private key redacted]",
		"plain text stays": "plain text stays",
	} {
		if got := taskpage.Redact(in, nil); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
