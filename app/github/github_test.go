package github_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/policy"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// world is a simulator with one installation on the account "acme", and the
// App that agentbot runs as against it.
type world struct {
	sim  *githubsim.Server
	inst int64
	log  *bytes.Buffer
	// sleeps are the waits the retrying transport asked for.
	sleeps *[]time.Duration
	sent   *requestCounter
}

// requestCounter counts the requests agentbot sends, by "METHOD /path",
// and can lose GitHub's answer to some of them: the request takes effect
// but agentbot sees a 502, as when a proxy times out after GitHub acted.
type requestCounter struct {
	mu   sync.Mutex
	n    map[string]int
	lose map[string]int // answers still to lose, by "METHOD /path"
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	key := r.Method + " " + strings.TrimPrefix(r.URL.Path, "/api/v3")
	c.mu.Lock()
	c.n[key]++
	lost := c.lose[key] > 0
	if lost {
		c.lose[key]--
	}
	c.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !lost {
		return resp, err
	}
	resp.Body.Close()
	return &http.Response{
		StatusCode: http.StatusBadGateway, Status: "502 Bad Gateway", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(strings.NewReader(`{"message":"Bad Gateway"}`)),
		Request: r,
	}, nil
}

func (c *requestCounter) loseAnswer(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lose[key]++
}

func (c *requestCounter) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func newWorld(t *testing.T) *world {
	t.Helper()
	sim, err := githubsim.New(githubsim.Options{AppKey: githubsim.SharedKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return &world{sim: sim, inst: sim.AddInstallation("acme"), log: &bytes.Buffer{},
		sleeps: new([]time.Duration), sent: &requestCounter{n: map[string]int{}, lose: map[string]int{}}}
}

// newApp starts agentbot's side; each call is a fresh process's worth of
// state (no cached clients, no remembered comment ids).
func (w *world) newApp(t *testing.T) *github.App {
	t.Helper()
	simApp := w.sim.App()
	ga, err := github.NewApp(github.Config{
		AppID:      simApp.ID,
		PrivateKey: simApp.PrivateKeyPEM,
		APIURL:     w.sim.APIURL(),
		Transport:  w.sent,
		Logger:     slog.New(slog.NewJSONHandler(w.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Retry: github.RetryPolicy{Sleep: func(_ context.Context, d time.Duration) error {
			*w.sleeps = append(*w.sleeps, d)
			return nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ga
}

// installation returns a fresh App's client for repo.
func (w *world) installation(t *testing.T, repo string) *github.Installation {
	t.Helper()
	inst, err := w.newApp(t).Installation(w.inst, repo)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func (w *world) addRepo(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	if err := w.sim.AddRepo(w.inst, repo, files); err != nil {
		t.Fatal(err)
	}
}

// push commits files on a new branch of repo through git smart HTTP, as a
// user would.
func (w *world) push(t *testing.T, repo, branch string, files map[string]string) {
	t.Helper()
	ctx := t.Context()
	ga := w.newApp(t)
	inst, err := ga.Installation(w.inst, repo)
	if err != nil {
		t.Fatal(err)
	}
	info, err := inst.Repository(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ga.Token(ctx, w.inst, repo, app.TokenPermissions{Contents: "write"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	auth := "http.extraHeader=Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+tok.Value))
	git := func(args ...string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", auth, "-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_TERMINAL_PROMPT=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("clone", "-q", info.CloneURL, ".")
	git("checkout", "-q", "-b", branch)
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-q", "-m", "change "+branch)
	git("push", "-q", "origin", branch)
}

// tokenClient is a plain REST client authenticated with tok.
func (w *world) tokenClient(t *testing.T, tok app.RepoToken) *gh.Client {
	t.Helper()
	c, err := gh.NewClient(nil).WithAuthToken(tok.Value).WithEnterpriseURLs(w.sim.APIURL(), w.sim.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTokenIsScopedToOneRepository(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{"README.md": "a"})
	w.addRepo(t, "acme/b", map[string]string{"README.md": "b"})
	ga := w.newApp(t)
	ctx := t.Context()

	tok, err := ga.Token(ctx, w.inst, "acme/a", app.TokenPermissions{Contents: "read"})
	if err != nil {
		t.Fatal(err)
	}
	c := w.tokenClient(t, tok)
	if _, _, err := c.Repositories.Get(ctx, "acme", "a"); err != nil {
		t.Errorf("token for acme/a refused on acme/a: %v", err)
	}
	if _, _, err := c.Repositories.Get(ctx, "acme", "b"); err == nil {
		t.Error("token for acme/a accepted on acme/b")
	}
	// Read on contents grants no write on issues.
	body := "hello"
	if _, _, err := c.Issues.CreateComment(ctx, "acme", "a", 1, &gh.IssueComment{Body: &body}); err == nil {
		t.Error("a contents:read token posted a comment")
	}
}

func TestTaskClientCannotTouchAnotherRepository(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	w.addRepo(t, "acme/b", map[string]string{policy.PolicyPath: mainPolicy})
	nb, err := w.sim.AddIssue("acme/b", "ada", "other", "someone else's issue")
	if err != nil {
		t.Fatal(err)
	}
	na, err := w.sim.AddIssue("acme/a", "ada", "bug", "/agent fix")
	if err != nil {
		t.Fatal(err)
	}
	inst := w.installation(t, "acme/a")
	ctx := t.Context()
	if _, err := inst.Issue(ctx, "acme/a", na); err != nil {
		t.Fatalf("the task's own issue: %v", err)
	}
	// The same installation covers acme/b, but the task's token does not.
	if _, err := inst.Repository(ctx, "acme/b"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("Repository(acme/b) = %v, want not_found", err)
	}
	if _, err := inst.Issue(ctx, "acme/b", nb); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("Issue(acme/b) = %v, want not_found", err)
	}
	if _, err := inst.LoadPolicy(ctx, "acme/b", policy.DefaultServerConfig()); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("LoadPolicy(acme/b) = %v, want not_found", err)
	}
	if err := inst.StatusComment("acme/b", nb, "T1").Set(ctx, "written from acme/a's task"); err == nil {
		t.Error("a comment was posted on acme/b")
	}
	if err := inst.React(ctx, &app.Task{Repo: "acme/b", Number: nb, CommentID: 1}, app.ReactionReceived); err == nil {
		t.Error("a reaction was put on acme/b")
	}
	if cs := w.sim.Comments("acme/b", nb); len(cs) != 0 {
		t.Errorf("acme/b#%d got comments %v", nb, cs)
	}
	// Each token asked for names one repository and no more than a task's
	// API calls need: no contents write, nothing beyond the four.
	for _, tok := range w.sim.TokensIssued() {
		if len(tok.Repositories) != 1 {
			t.Errorf("token for %v: want exactly one repository", tok.Repositories)
		}
		if tok.Permissions["contents"] == "write" || len(tok.Permissions) > 5 {
			t.Errorf("token for %v carries %v", tok.Repositories, tok.Permissions)
		}
	}
}

func TestTokenIsNeverLogged(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	ga := w.newApp(t)
	tok, err := ga.Token(t.Context(), w.inst, "acme/a", app.TokenPermissions{Contents: "write"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Value == "" {
		t.Fatal("empty token")
	}
	// Even a careless log line or print of the token must not leak it.
	logger := slog.New(slog.NewJSONHandler(w.log, nil))
	logger.Info("careless", "token", tok)
	logger.Info("careless print", "token", tok.String())
	if !strings.Contains(w.log.String(), "minted repository token") {
		t.Fatalf("the mint was not logged at all:\n%s", w.log)
	}
	if strings.Contains(w.log.String(), tok.Value) {
		t.Errorf("the token appears in the log:\n%s", w.log)
	}
}

func TestRepositoryAndPermission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	for login, role := range map[string]string{"ada": "admin", "max": "maintain", "wes": "write", "tia": "triage", "rob": "read"} {
		if err := w.sim.SetPermission("acme/a", login, role); err != nil {
			t.Fatal(err)
		}
	}
	inst := w.installation(t, "acme/a")
	ctx := t.Context()
	info, err := inst.Repository(ctx, "acme/a")
	if err != nil {
		t.Fatal(err)
	}
	if info.FullName != "acme/a" || info.DefaultBranch != "main" || !strings.HasSuffix(info.CloneURL, "/acme/a.git") {
		t.Errorf("repository = %+v", info)
	}
	if _, err := inst.Repository(ctx, "acme/missing"); app.ErrorCode(err) != app.ENotFound {
		t.Errorf("missing repository: %v, want a not_found *Error", err)
	}
	for login, want := range map[string]string{"ada": "admin", "max": "maintain", "wes": "write", "tia": "triage", "rob": "read", "eve": "none"} {
		got, err := inst.Permission(ctx, "acme/a", login)
		if err != nil || got != want {
			t.Errorf("Permission(%s) = %q, %v; want %q", login, got, err, want)
		}
	}
}

func TestInstallationClientsAreCached(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ga := w.newApp(t)
	a, _ := ga.Installation(w.inst, "acme/a")
	b, _ := ga.Installation(w.inst, "acme/a")
	if a != b {
		t.Error("two clients for one installation")
	}
}

func TestRetriesHonourGitHubsAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		fault    githubsim.Fault
		ok       bool
		requests int
		waits    []time.Duration
	}{
		{"Retry-After is honoured", githubsim.Fault{Status: 429, RetryAfter: 3 * time.Second, Times: 2},
			true, 3, []time.Duration{3 * time.Second, 3 * time.Second}},
		{"secondary limit", githubsim.Fault{Status: 403, Secondary: true, RetryAfter: time.Second, Times: 1},
			true, 2, []time.Duration{time.Second}},
		{"server errors are retried a bounded number of times", githubsim.Fault{Status: 503},
			false, 4, nil},
		{"a wait longer than the cap is not taken", githubsim.Fault{Status: 429, RetryAfter: time.Hour},
			false, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.addRepo(t, "acme/a", nil)
			inst := w.installation(t, "acme/a")
			w.sim.Inject("GET", "/repos/acme/a", tc.fault)
			_, err := inst.Repository(t.Context(), "acme/a")
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want success %v", err, tc.ok)
			}
			if got := w.sent.count("GET /repos/acme/a"); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
			if tc.waits != nil && !slices.Equal(*w.sleeps, tc.waits) {
				t.Errorf("waited %v, want %v", *w.sleeps, tc.waits)
			}
		})
	}
}

// The trust rules ask an *Installation for roles.
var _ app.Permissions = (*github.Installation)(nil)

func TestAuthorizeAsksGitHubForRoles(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", nil)
	for login, role := range map[string]string{"max": "maintain", "tia": "triage"} {
		if err := w.sim.SetPermission("acme/a", login, role); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := policy.BuildPolicy(policy.DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	auth := policy.NewAuthorizer(w.installation(t, "acme/a"), pol)
	for login, allowed := range map[string]bool{"max": true, "tia": false, "eve": false} {
		d, err := auth.Authorize(t.Context(), app.Actor{Login: login, Type: "User"},
			app.Invocation{Repo: "acme/a", Verb: app.VerbFix, Text: "/agent fix"})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != allowed {
			t.Errorf("%s: allowed %v (%s), want %v", login, d.Allowed, d.Reason, allowed)
		}
	}
}
