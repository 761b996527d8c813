// Package workspacetest serves real bare repositories over git's smart HTTP
// protocol for tests: "git http-backend" behind a handler that, like GitHub,
// accepts only an installation token as Basic "x-access-token:TOKEN".
package workspacetest

import (
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Server is a git smart-HTTP server over the bare repositories in a
// temporary directory. Repositories are at URL + "/" + owner/name + ".git".
type Server struct {
	URL   string
	Token string
	root  string

	mu       sync.Mutex
	requests []*http.Request
}

// NewServer starts a server accepting token; it stops when the test ends.
func NewServer(t testing.TB, token string) *Server {
	t.Helper()
	s := &Server{Token: token, root: t.TempDir()}
	backend := &cgi.Handler{
		Path: gitPath(t),
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.root,
		},
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Clone(r.Context()))
		s.mu.Unlock()
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "token required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests returns the requests received so far, headers included.
func (s *Server) Requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.requests...)
}

// RepoURL is the clone URL of the repository named owner/name.
func (s *Server) RepoURL(name string) string { return s.URL + "/" + name + ".git" }

// RepoDir is the bare repository's directory.
func (s *Server) RepoDir(name string) string {
	return filepath.Join(s.root, filepath.FromSlash(name)+".git")
}

// CreateRepo creates the bare repository owner/name whose main branch has
// one commit of whatever populate writes into the directory it is given
// (files, executables, symlinks), and returns that commit's id.
func (s *Server) CreateRepo(t testing.TB, name string, populate func(dir string)) string {
	t.Helper()
	src := t.TempDir()
	populate(src)
	Git(t, src, "init", "--quiet", "--initial-branch=main")
	Git(t, src, "add", "--all")
	Git(t, src, "commit", "--quiet", "--no-verify", "-m", "initial")
	bare := s.RepoDir(name)
	if err := os.MkdirAll(filepath.Dir(bare), 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, "", "clone", "--quiet", "--bare", src, bare)
	// Pushes are allowed because the handler checked the token.
	Git(t, bare, "config", "http.receivepack", "true")
	return s.Ref(t, name, "main")
}

// Commit adds a commit to the main branch of the repository: change gets
// a checkout of main to edit, and everything in it is committed. It
// returns the new commit's id.
func (s *Server) Commit(t testing.TB, name string, change func(dir string)) string {
	t.Helper()
	src := t.TempDir()
	Git(t, "", "clone", "--quiet", "--branch=main", s.RepoDir(name), src)
	change(src)
	Git(t, src, "add", "--all")
	Git(t, src, "commit", "--quiet", "--no-verify", "--allow-empty", "-m", "change")
	Git(t, src, "push", "--quiet", "origin", "main")
	return s.Ref(t, name, "main")
}

// Ref returns the commit ref points at in the repository, or "" if it
// does not exist.
func (s *Server) Ref(t testing.TB, name, ref string) string {
	t.Helper()
	out, err := command(s.RepoDir(name), "rev-parse", "--verify", "--quiet", ref).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// File returns the content of path in commit of the repository, and
// whether it exists there.
func (s *Server) File(t testing.TB, name, commit, path string) (string, bool) {
	t.Helper()
	out, err := command(s.RepoDir(name), "cat-file", "blob", commit+":"+path).Output()
	return string(out), err == nil
}

// Git runs git in dir with a clean identity and no user config, failing
// the test on error, and returns its output.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := command(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func command(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	return cmd
}

func gitPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required: %v", err)
	}
	return p
}
