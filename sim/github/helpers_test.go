package github_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
)

const (
	owner = "acme"
	name  = "widgets"
	full  = owner + "/" + name
)

// world is a simulator with one installation on acme holding acme/widgets
// (and acme/other, for scoping tests).
type world struct {
	s       *githubsim.Server
	install int64
}

func newWorld(t testing.TB) *world {
	t.Helper()
	s, err := githubsim.New(githubsim.Options{AppKey: githubsim.SharedKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	w := &world{s: s, install: s.AddInstallation(owner)}
	files := map[string]string{
		"README.md":          "# widgets\n",
		".github/agent.yml":  "version: 1\nchecks:\n  - {name: test, run: go test ./...}\n",
		"cmd/widget/main.go": "package main\n\nfunc main() {}\n",
	}
	for _, repo := range []string{full, owner + "/other"} {
		if err := s.AddRepo(w.install, repo, files); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// transport returns an installation transport over base (nil: default).
func (w *world) transport(t testing.TB, base http.RoundTripper, opts *github.InstallationTokenOptions) *ghinstallation.Transport {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	app := w.s.App()
	itr, err := ghinstallation.New(base, app.ID, w.install, app.PrivateKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = w.s.APIURL()
	itr.InstallationTokenOptions = opts
	return itr
}

// client is a go-github client acting as the installation.
func (w *world) client(t testing.TB, base http.RoundTripper, opts *github.InstallationTokenOptions) *github.Client {
	t.Helper()
	return newClient(t, w.s, w.transport(t, base, opts))
}

func newClient(t testing.TB, s *githubsim.Server, rt http.RoundTripper) *github.Client {
	t.Helper()
	c, err := github.NewClient(&http.Client{Transport: rt, Timeout: 30 * time.Second}).WithEnterpriseURLs(s.APIURL(), s.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// token mints an installation token with opts.
func (w *world) token(t testing.TB, opts *github.InstallationTokenOptions) string {
	t.Helper()
	tok, err := w.transport(t, nil, opts).Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// git runs git in dir and returns its combined output and error.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := git(dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// cloneURL puts the token into the repository's clone URL, the canonical
// x-access-token Basic form.
func (w *world) cloneURL(repo, tok string) string {
	return strings.Replace(w.s.URL(), "http://", "http://x-access-token:"+tok+"@", 1) + "/" + repo + ".git"
}

// mustBranchSHA returns the commit branch of the test repository points at.
func (w *world) mustBranchSHA(t testing.TB, branch string) string {
	t.Helper()
	sha, err := w.s.BranchSHA(full, branch)
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

// pushBranch clones repo, commits one file on branch (new or existing)
// and pushes it.
func (w *world) pushBranch(t testing.TB, repo, branch, file, content string) {
	t.Helper()
	tok := w.token(t, nil)
	dir := filepath.Join(t.TempDir(), "clone")
	mustGit(t, "", "clone", "--quiet", w.cloneURL(repo, tok), dir)
	if _, err := git(dir, "checkout", "--quiet", branch); err != nil { // a new branch
		mustGit(t, dir, "checkout", "--quiet", "-b", branch)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, dir, "add", "--all")
	mustGit(t, dir, "commit", "--quiet", "-m", "change "+file)
	mustGit(t, dir, "push", "--quiet", "origin", branch)
}
