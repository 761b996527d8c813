package github

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// gitTimeout bounds every git command the simulator runs itself.
const gitTimeout = 30 * time.Second

// errNoObject is returned when a ref or path does not exist in a repository.
var errNoObject = errors.New("no such ref or path")

// runGit runs git with a fixed identity and no user or system config, so
// the host's settings cannot change what the simulator stores.
func (s *Server) runGit(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	return s.runGitInput(ctx, dir, env, nil, args...)
}

// runGitInput is runGit with stdin as the command's input.
func (s *Server) runGitInput(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.git, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=githubsim", "GIT_AUTHOR_EMAIL=githubsim@example.invalid",
		"GIT_COMMITTER_NAME=githubsim", "GIT_COMMITTER_EMAIL=githubsim@example.invalid")
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// workflowsHook refuses, as GitHub does, a push that creates or updates a
// workflow file when the App's token lacks workflows: write; serveGit
// tells it through GITHUBSIM_WORKFLOWS.
const workflowsHook = `#!/bin/sh
[ "$GITHUBSIM_WORKFLOWS" = write ] && exit 0
zero=0000000000000000000000000000000000000000
bt=$(printf '\140') # a backtick, which GitHub's message quotes with
while read old new ref; do
	[ "$new" = "$zero" ] && continue
	if [ "$old" = "$zero" ]; then range="$new --not --all"; else range="$old..$new"; fi
	f=$(git log --format= --name-only $range -- .github/workflows | head -n 1)
	if [ -n "$f" ]; then
		echo "refusing to allow a GitHub App to create or update workflow $bt$f$bt without ${bt}workflows$bt permission" >&2
		exit 1
	fi
done
`

// initRepo creates DIR/owner/name.git with branch main holding one
// commit of files, and enables pushes over HTTP.
func (s *Server) initRepo(owner, name string, files map[string]string) (string, error) {
	ctx := context.Background()
	bare := filepath.Join(s.dir, owner, name+".git")
	if _, err := s.runGit(ctx, s.dir, nil, "init", "--quiet", "--bare", "--initial-branch=main", bare); err != nil {
		return "", err
	}
	if _, err := s.runGit(ctx, bare, nil, "config", "http.receivepack", "true"); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(workflowsHook), 0o755); err != nil {
		return "", fmt.Errorf("install pre-receive hook: %w", err)
	}
	tmp, err := os.MkdirTemp("", "githubsim-work-")
	if err != nil {
		return "", fmt.Errorf("initial commit: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The index lives beside the work tree, or `add --all` would commit it.
	work := filepath.Join(tmp, "tree")
	if err := os.Mkdir(work, 0o755); err != nil {
		return "", fmt.Errorf("initial commit: %w", err)
	}
	for _, p := range sortedKeys(files) {
		full := filepath.Join(work, filepath.FromSlash(p))
		if !strings.HasPrefix(full, work+string(filepath.Separator)) {
			return "", fmt.Errorf("file %q leaves the repository", p)
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("initial commit: %w", err)
		}
		if err := os.WriteFile(full, []byte(files[p]), 0o644); err != nil {
			return "", fmt.Errorf("initial commit: %w", err)
		}
	}
	env := []string{"GIT_DIR=" + bare, "GIT_WORK_TREE=" + work, "GIT_INDEX_FILE=" + filepath.Join(tmp, "index")}
	if _, err := s.runGit(ctx, work, env, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	if _, err := s.runGit(ctx, work, env, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "Initial commit"); err != nil {
		return "", err
	}
	return bare, nil
}

// resolve turns a branch name, tag or SHA into a commit SHA.
func (s *Server) resolve(dir, ref string) (string, error) {
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", errNoObject
	}
	out, err := s.runGit(context.Background(), dir, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		return "", errNoObject
	}
	return strings.TrimSpace(string(out)), nil
}

func (s *Server) branchSHA(dir, branch string) (string, error) {
	return s.resolve(dir, "refs/heads/"+branch)
}

func (s *Server) branches(dir string) (map[string]string, error) {
	out, err := s.runGit(context.Background(), dir, nil, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for line := range strings.Lines(string(out)) {
		if name, sha, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			m[name] = sha
		}
	}
	return m, nil
}

// treeEntry is one line of `git ls-tree -l`.
type treeEntry struct {
	mode, typ, sha, path string
	size                 int
}

// lsTree lists path at commit: the entry itself when dir is false, its
// children when true.
func (s *Server) lsTree(repoDir, commit, path string, dir bool) ([]treeEntry, error) {
	spec := path
	if dir && path != "" {
		spec = path + "/"
	}
	args := []string{"ls-tree", "-l", "-z", commit}
	if spec != "" {
		args = append(args, "--", spec)
	}
	out, err := s.runGit(context.Background(), repoDir, nil, args...)
	if err != nil {
		return nil, err
	}
	var entries []treeEntry
	for rec := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 4 {
			continue
		}
		size, _ := strconv.Atoi(f[3]) // "-" for trees: size 0
		entries = append(entries, treeEntry{mode: f[0], typ: f[1], sha: f[2], size: size, path: p})
	}
	return entries, nil
}

func (s *Server) readBlob(repoDir, sha string) ([]byte, error) {
	return s.runGit(context.Background(), repoDir, nil, "cat-file", "blob", sha)
}

// diffStats counts commits and changed lines between base and head, as a
// pull request shows them; what git cannot tell counts as zero, which is
// also what GitHub shows while it computes them.
func (s *Server) diffStats(repoDir, base, head string) (commits, additions, deletions, files int) {
	if out, err := s.runGit(context.Background(), repoDir, nil, "rev-list", "--count", base+".."+head); err == nil {
		commits, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	out, err := s.runGit(context.Background(), repoDir, nil, "diff", "--numstat", base+"..."+head)
	if err != nil {
		return commits, 0, 0, 0
	}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		a, _ := strconv.Atoi(f[0]) // "-" for binary files
		d, _ := strconv.Atoi(f[1])
		additions, deletions, files = additions+a, deletions+d, files+1
	}
	return commits, additions, deletions, files
}

// serveGit answers git smart HTTP for /OWNER/REPO.git/... after checking
// the installation token: clone needs contents read, push contents write.
func (s *Server) serveGit(w http.ResponseWriter, r *http.Request) {
	owner, name := r.PathValue("owner"), strings.TrimSuffix(r.PathValue("repo"), ".git")
	push := r.URL.Query().Get("service") == "git-receive-pack" || strings.HasSuffix(r.URL.Path, "/git-receive-pack")
	level := "read"
	if push {
		level = "write"
	}
	tok := gitToken(r)
	if tok == "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Authentication required", http.StatusUnauthorized)
		return
	}
	rp, status := s.checkToken(tok, owner+"/"+name, level, "contents")
	switch status {
	case http.StatusOK:
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(w, "Invalid username or token. Password authentication is not supported for Git operations.", status)
		return
	case http.StatusForbidden:
		http.Error(w, "Write access to repository not granted.", status)
		return
	default:
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	workflows := "none"
	if _, st := s.checkToken(tok, owner+"/"+name, "write", "workflows"); st == http.StatusOK {
		workflows = "write"
	}
	h := &cgi.Handler{
		Path: s.git,
		Args: []string{"http-backend"},
		Dir:  s.dir,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.dir, "GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"REMOTE_USER=x-access-token",
			"GITHUBSIM_WORKFLOWS=" + workflows,
		},
	}
	// http-backend finds the repository from PATH_INFO; route by the
	// stored directory so a differently-cased URL reaches the same repo.
	rel, err := filepath.Rel(s.dir, rp.dir)
	if err != nil {
		http.Error(w, "Repository not found.", http.StatusNotFound)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + filepath.ToSlash(rel) + "/" + r.PathValue("rest")
	if !push || r.Method != http.MethodPost {
		h.ServeHTTP(w, r2)
		return
	}
	before, _ := s.branches(rp.dir) // empty on failure: every branch then counts as moved
	h.ServeHTTP(w, r2)
	after, err := s.branches(rp.dir)
	if err != nil {
		s.log.Warn("githubsim: read branches after push", "repo", rp.fullName(), "err", err)
		return
	}
	s.pushed(rp, before, after)
}

// pushed does what GitHub does when a push moves the head of open pull
// requests: bumps their updated_at and sends pull_request "synchronize".
func (s *Server) pushed(rp *repo, before, after map[string]string) {
	s.mu.Lock()
	var moved []*Issue
	for _, is := range rp.issues {
		p := is.Pull
		if p != nil && is.State == "open" && p.HeadRepo == rp.fullName() && after[p.Head] != "" && before[p.Head] != after[p.Head] {
			is.UpdatedAt = now()
			moved = append(moved, is)
		}
	}
	s.mu.Unlock()
	for _, is := range moved {
		v := s.view(rp, is, true)
		s.mu.Lock()
		event := s.envelopeLocked(rp, "synchronize", s.app.BotLogin)
		event["number"] = is.Number
		event["before"], event["after"] = before[is.Pull.Head], after[is.Pull.Head]
		event["pull_request"] = s.pullJSON(rp, is, v, true)
		s.mu.Unlock()
		s.echo("pull_request", event)
	}
}
