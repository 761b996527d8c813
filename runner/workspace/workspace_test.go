package workspace_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/workspace"
	"github.com/agentbot/agentbot/runner/workspace/workspacetest"
)

const token = "ghs_TESTtoken0123456789abcdefSECRET"

// env is one test's server, manager and captured logs.
type env struct {
	srv     *workspacetest.Server
	m       *workspace.Manager
	dataDir string
	logs    *ostest.SyncBuffer
}

func newEnv(t *testing.T, opts workspace.Options) *env {
	t.Helper()
	e := &env{srv: workspacetest.NewServer(t, token), dataDir: t.TempDir(), logs: &ostest.SyncBuffer{}}
	opts.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Every test runs with a spare tree unless it says otherwise, so that
	// what holds of a checkout is seen to hold of one from a spare.
	if opts.SpareTrees == 0 {
		opts.SpareTrees = 1
	}
	e.m = workspace.NewManager(e.dataDir, opts)
	t.Cleanup(func() {
		if err := e.m.Close(); err != nil {
			t.Errorf("close manager: %v", err)
		}
	})
	return e
}

func (e *env) remote(repo string) workspace.Remote {
	return workspace.Remote{URL: e.srv.RepoURL(repo), Token: token}
}

func (e *env) checkout(t *testing.T, repo, base string) *workspace.Workspace {
	t.Helper()
	w, err := e.m.Checkout(t.Context(), workspace.CheckoutOptions{Repo: repo, Remote: e.remote(repo), Base: base})
	if err != nil {
		t.Fatalf("checkout: %v", err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func (e *env) repo(t *testing.T, name string, files map[string]string) string {
	t.Helper()
	return e.srv.CreateRepo(t, name, func(dir string) { ostest.WriteTree(t, dir, files) })
}

var allowAll = policy.Policy{Paths: policy.Paths{Allow: []string{"**"}}}

var author = workspace.Signature{Name: "agentbot", Email: "agentbot@example.com"}

// assertNoToken fails if the token, raw or in its Basic form, is in any
// of texts or in any file under dir (unless dir is "").
func assertNoToken(t *testing.T, dir string, texts ...string) {
	t.Helper()
	needles := []string{token, base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))}
	for _, text := range texts {
		for _, n := range needles {
			if strings.Contains(text, n) {
				t.Errorf("token found in output or logs: %.200s", text)
			}
		}
	}
	if dir == "" {
		return
	}
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		for _, n := range needles {
			if bytes.Contains(b, []byte(n)) {
				t.Errorf("token found in %s", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no files under %s to search", dir)
	}
}

func TestCheckoutChangeGateCommitPush(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	base := e.repo(t, "octo/hello", map[string]string{
		"README.md":     "hello\n",
		"src/main.go":   "package main\n",
		"src/old.go":    "package main\n\n// old\n",
		"src/gone.go":   "package gone\n",
		"tools/run.sh*": "#!/bin/sh\n",
	})
	w := e.checkout(t, "octo/hello", "main")
	if w.Base() != base || w.Head() != base {
		t.Fatalf("base %s head %s, want %s", w.Base(), w.Head(), base)
	}
	if _, err := os.Lstat(filepath.Join(w.Dir(), ".git")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("work tree has a .git: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(w.Dir(), "tools/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("executable not checked out as such: %v %v", fi, err)
	}

	r := w.Root()
	mustDo(t, r.WriteFile("README.md", []byte("hello, world\n"), 0o644))
	mustDo(t, r.WriteFile("src/new.go", []byte("package main\n\nfunc f() {}\n"), 0o644))
	mustDo(t, r.Remove("src/gone.go"))
	mustDo(t, r.Rename("src/old.go", "src/renamed.go"))

	diff, err := w.Diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"+hello, world", "new file mode 100644", "+func f() {}",
		"deleted file mode 100644", "rename from src/old.go", "rename to src/renamed.go",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}

	rep, err := w.Gate(t.Context(), allowAll)
	if err != nil {
		t.Fatalf("gate: %v", err)
	}
	if rep.FilesChanged != 4 || rep.Diff != diff {
		t.Errorf("gate report: %d files, same diff %v", rep.FilesChanged, rep.Diff == diff)
	}
	sha, err := w.Commit(t.Context(), workspace.CommitOptions{
		Message:   "Say hello to the world",
		Author:    author,
		CoAuthors: []workspace.Signature{{Name: "Octo Cat", Email: "octo@example.com"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if again, err := w.Commit(t.Context(), workspace.CommitOptions{Message: "again", Author: author}); err != nil || again != sha {
		t.Errorf("second commit of the same tree = %s, %v; want %s", again, err, sha)
	}
	if err := w.Push(t.Context(), e.remote("octo/hello"), "agent/1-hello", ""); err != nil {
		t.Fatalf("push: %v", err)
	}
	if got := e.srv.Ref(t, "octo/hello", "refs/heads/agent/1-hello"); got != sha {
		t.Fatalf("remote branch at %q, want %s", got, sha)
	}
	// A retried push finds the branch at the commit and succeeds.
	if err := w.Push(t.Context(), e.remote("octo/hello"), "agent/1-hello", ""); err != nil {
		t.Fatalf("repeated push: %v", err)
	}
	bare := e.srv.RepoDir("octo/hello")
	if got := workspacetest.Git(t, bare, "rev-parse", sha+"^"); got != base {
		t.Errorf("parent %s, want base %s", got, base)
	}
	msg := workspacetest.Git(t, bare, "log", "-1", "--format=%an <%ae>%n%B", sha)
	for _, want := range []string{"agentbot <agentbot@example.com>", "Say hello to the world", "Co-authored-by: Octo Cat <octo@example.com>"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit lacks %q:\n%s", want, msg)
		}
	}
	if got, _ := e.srv.File(t, "octo/hello", sha, "src/renamed.go"); got != "package main\n\n// old\n" {
		t.Errorf("renamed file in pushed commit: %q", got)
	}

	// A second task on the same repository fetches the warm mirror.
	w2 := e.checkout(t, "octo/hello", "")
	if w2.Base() != base {
		t.Errorf("second checkout at %s, want %s", w2.Base(), base)
	}
	dir := w.Dir()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("workspace not removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "mirrors/octo/hello.git/HEAD")); err != nil {
		t.Errorf("mirror removed: %v", err)
	}

	// The token went over the wire on clone, fetch, ls-remote and push...
	authed := 0
	for _, r := range e.srv.Requests() {
		if r.Header.Get("Authorization") != "" {
			authed++
		}
	}
	if authed == 0 {
		t.Fatal("no authenticated request reached the server")
	}
	// ...and is nowhere on disk or in the logs.
	assertNoToken(t, e.dataDir, e.logs.String(), diff)
	if !strings.Contains(e.logs.String(), `"clone"`) {
		t.Errorf("logs did not capture git commands:\n%s", e.logs.String())
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPushLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/lease", map[string]string{"a.txt": "a\n"})
	bare := e.srv.RepoDir("octo/lease")
	workspacetest.Git(t, bare, "branch", "agent/2-x", "main")
	other := e.srv.Ref(t, "octo/lease", "main")

	w := e.checkout(t, "octo/lease", "main")
	mustDo(t, w.Root().WriteFile("a.txt", []byte("b\n"), 0o644))
	if _, err := w.Gate(t.Context(), allowAll); err != nil {
		t.Fatal(err)
	}
	sha, err := w.Commit(t.Context(), workspace.CommitOptions{Message: "b", Author: author})
	if err != nil {
		t.Fatal(err)
	}

	// The branch exists, so the new-branch lease must fail and push nothing.
	err = w.Push(t.Context(), e.remote("octo/lease"), "agent/2-x", "")
	if app.ErrorCode(err) != app.EConflict {
		t.Fatalf("push over an existing branch with an empty lease: %v", err)
	}
	if got := e.srv.Ref(t, "octo/lease", "agent/2-x"); got != other {
		t.Fatalf("branch moved to %s despite the lease", got)
	}
	wrong := strings.Repeat("1", 40)
	if err := w.Push(t.Context(), e.remote("octo/lease"), "agent/2-x", wrong); app.ErrorCode(err) != app.EConflict {
		t.Fatalf("push with a stale lease: %v", err)
	}
	if err := w.Push(t.Context(), e.remote("octo/lease"), "agent/2-x", other); err != nil {
		t.Fatalf("push with the right lease: %v", err)
	}
	if got := e.srv.Ref(t, "octo/lease", "agent/2-x"); got != sha {
		t.Fatalf("branch at %s, want %s", got, sha)
	}
}

// Bad input gets a clear error and changes nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/bad", map[string]string{"a.txt": "a\n"})
	ctx := t.Context()

	checkouts := []struct {
		name string
		opts workspace.CheckoutOptions
		code string
	}{
		{"repo name", workspace.CheckoutOptions{Repo: "../etc", Remote: e.remote("octo/bad")}, app.EInvalid},
		{"repo name with a dot segment", workspace.CheckoutOptions{Repo: "octo/..", Remote: e.remote("octo/bad")}, app.EInvalid},
		{"repo name with a slash too many", workspace.CheckoutOptions{Repo: "octo/bad/x", Remote: e.remote("octo/bad")}, app.EInvalid},
		{"credentials in URL", workspace.CheckoutOptions{Repo: "octo/bad",
			Remote: workspace.Remote{URL: strings.Replace(e.srv.RepoURL("octo/bad"), "http://", "http://x-access-token:"+token+"@", 1)}}, app.EInvalid},
		{"ext transport", workspace.CheckoutOptions{Repo: "octo/bad", Remote: workspace.Remote{URL: "ext::sh -c touch% /tmp/pwned"}}, app.EInvalid},
		{"option as base", workspace.CheckoutOptions{Repo: "octo/bad", Remote: e.remote("octo/bad"), Base: "--upload-pack=touch"}, app.EInvalid},
		{"unknown base", workspace.CheckoutOptions{Repo: "octo/bad", Remote: e.remote("octo/bad"), Base: "no-such-branch"}, app.ENotFound},
		{"unknown commit", workspace.CheckoutOptions{Repo: "octo/bad", Remote: e.remote("octo/bad"), Base: strings.Repeat("a", 40)}, app.ENotFound},
	}
	for _, tc := range checkouts {
		t.Run("checkout/"+tc.name, func(t *testing.T) {
			_, err := e.m.Checkout(ctx, tc.opts)
			if app.ErrorCode(err) != tc.code {
				t.Fatalf("error %v, want code %s", err, tc.code)
			}
			assertNoToken(t, "", err.Error())
		})
	}

	t.Run("wrong token", func(t *testing.T) {
		e.repo(t, "octo/other", map[string]string{"a.txt": "a\n"})
		_, err := e.m.Checkout(ctx, workspace.CheckoutOptions{Repo: "octo/other",
			Remote: workspace.Remote{URL: e.srv.RepoURL("octo/other"), Token: "ghs_wrong"}})
		if err == nil || strings.Contains(err.Error(), "ghs_wrong") {
			t.Fatalf("clone with a wrong token: %v", err)
		}
		entries, _ := os.ReadDir(filepath.Join(e.dataDir, "mirrors/octo"))
		for _, d := range entries {
			if strings.HasPrefix(d.Name(), "other.git") && d.Name() != "other.git.lock" || strings.HasPrefix(d.Name(), ".clone-") {
				t.Errorf("a failed clone left %s behind", d.Name())
			}
		}
	})

	w := e.checkout(t, "octo/bad", "main")
	t.Run("malformed diff", func(t *testing.T) {
		mustDo(t, w.Root().WriteFile("a.txt", []byte("changed\n"), 0o644))
		before, err := w.Diff(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bad := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-nope\n+x\n" +
			"diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+n\n"
		if err := w.Apply(ctx, bad); err == nil {
			t.Fatal("a diff that does not apply was accepted")
		}
		if after, _ := w.Diff(ctx); after != before {
			t.Errorf("a failed apply changed the tree:\n%s", after)
		}
	})
	t.Run("commit without gate", func(t *testing.T) {
		if _, err := w.Commit(ctx, workspace.CommitOptions{Message: "m", Author: author}); err == nil {
			t.Fatal("commit ran without a passing gate")
		}
	})
	t.Run("commit fields", func(t *testing.T) {
		if _, err := w.Gate(ctx, allowAll); err != nil {
			t.Fatal(err)
		}
		for _, o := range []workspace.CommitOptions{
			{Message: " \n", Author: author},
			{Message: "m", Author: workspace.Signature{Name: "x"}},
			{Message: "m", Author: author, CoAuthors: []workspace.Signature{{Name: "a>b", Email: "e"}}},
		} {
			if _, err := w.Commit(ctx, o); app.ErrorCode(err) != app.EInvalid {
				t.Errorf("commit %+v: %v, want %s", o, err, app.EInvalid)
			}
		}
		if w.Head() != w.Base() {
			t.Error("a refused commit moved head")
		}
	})
	t.Run("push", func(t *testing.T) {
		if err := w.Push(ctx, e.remote("octo/bad"), "agent/x", ""); err == nil {
			t.Fatal("pushed with nothing committed")
		}
		if _, err := w.Commit(ctx, workspace.CommitOptions{Message: "m", Author: author}); err != nil {
			t.Fatal(err)
		}
		for _, b := range []string{"a..b", "-f", "x y", ""} {
			if err := w.Push(ctx, e.remote("octo/bad"), b, ""); app.ErrorCode(err) != app.EInvalid {
				t.Errorf("push to %q: %v", b, err)
			}
		}
	})
	t.Run("nothing to commit", func(t *testing.T) {
		w := e.checkout(t, "octo/bad", "main")
		if _, err := w.Gate(ctx, allowAll); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx, workspace.CommitOptions{Message: "m", Author: author}); !errors.Is(err, workspace.ErrNoChanges) {
			t.Fatalf("empty commit: %v", err)
		}
	})
}

func TestApplyRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/trip", map[string]string{
		"keep.txt":    "keep\n",
		"delete.txt":  "delete me\n",
		"move/a.txt":  "line 1\nline 2\nline 3\nline 4\n",
		"script.sh":   "#!/bin/sh\necho hi\n",
		"img.bin":     "\x00\x01\x02binary\x00",
		"lib/link":    "->../keep.txt",
		"exec.sh*":    "#!/bin/sh\n",
		"crlf.txt":    "a\r\nb\r\n",
		"notrail.txt": "no newline",
	})
	w1 := e.checkout(t, "octo/trip", "main")
	r := w1.Root()
	mustDo(t, r.WriteFile("new.txt", []byte("new\n"), 0o644))
	mustDo(t, r.Remove("delete.txt"))
	mustDo(t, r.MkdirAll("moved", 0o755))
	mustDo(t, r.Rename("move/a.txt", "moved/b.txt"))
	mustDo(t, r.Chmod("script.sh", 0o755))
	mustDo(t, r.Chmod("exec.sh", 0o644))
	mustDo(t, r.WriteFile("img.bin", []byte("\x00\x09\x08other binary\x00\xff"), 0o644))
	mustDo(t, r.WriteFile("new.bin", bytes.Repeat([]byte{0, 1, 2, 3, 0xfe}, 1000), 0o644))
	mustDo(t, r.Remove("lib/link"))
	mustDo(t, r.Symlink("../new.txt", "lib/link"))
	mustDo(t, r.Symlink("keep.txt", "newlink"))
	mustDo(t, r.WriteFile("crlf.txt", []byte("a\r\nb\r\nc\r\n"), 0o644))
	mustDo(t, r.WriteFile("notrail.txt", []byte("still no newline"), 0o644))

	diff, err := w1.Diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GIT binary patch", "old mode 100644\nnew mode 100755", "rename to moved/b.txt", "new file mode 120000"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q", want)
		}
	}

	w2 := e.checkout(t, "octo/trip", "main")
	if err := w2.Apply(t.Context(), diff); err != nil {
		t.Fatal(err)
	}
	again, err := w2.Diff(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The diff names every blob by its full id, so equal diffs are equal trees.
	if again != diff {
		t.Fatalf("round trip differs:\n--- first\n%s\n--- after apply\n%s", diff, again)
	}
	r1, r2 := w1.Root(), w2.Root()
	for _, name := range []string{"img.bin", "new.bin", "crlf.txt", "moved/b.txt"} {
		a, _ := r1.ReadFile(name)
		b, err := r2.ReadFile(name)
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs after apply: %v", name, err)
		}
	}
	if target, err := r2.Readlink("lib/link"); err != nil || target != "../new.txt" {
		t.Errorf("symlink after apply: %q %v", target, err)
	}
	if fi, err := r2.Stat("script.sh"); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("mode change lost: %v %v", fi, err)
	}
}

// Tasks starting on the same repository at once share one mirror, however
// they spell its name.
func TestConcurrentCheckouts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	base := e.repo(t, "octo/busy", map[string]string{"a.txt": "a\n"})
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			repo := []string{"octo/busy", "Octo/Busy"}[i%2]
			w, err := e.m.Checkout(ctx, workspace.CheckoutOptions{Repo: repo, Remote: e.remote("octo/busy")})
			if err == nil {
				if w.Base() != base {
					err = errors.New("wrong base " + w.Base())
				}
				w.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("checkout %d: %v", i, err)
		}
	}
	mirrors, _ := filepath.Glob(filepath.Join(e.dataDir, "mirrors", "*", "*.git"))
	if len(mirrors) != 1 {
		t.Errorf("mirrors %q, want one", mirrors)
	}
}

// A command that outlives its timeout is killed, and a failed clone leaves
// no mirror behind.
func TestCommandTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{CommandTimeout: time.Millisecond})
	e.repo(t, "octo/slow", map[string]string{"a.txt": "a\n"})
	_, err := e.m.Checkout(t.Context(), workspace.CheckoutOptions{Repo: "octo/slow", Remote: e.remote("octo/slow")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("checkout with a 1ms command timeout: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "mirrors/octo/slow.git")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a timed-out clone left a mirror: %v", err)
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/var/cache/someone")
	dir, err := workspace.DefaultDataDir()
	if err != nil || dir != "/var/cache/someone/agentbot" {
		t.Fatalf("DefaultDataDir() = %q, %v", dir, err)
	}
}

// A worker killed mid-task leaves its workspace and its spare tree behind;
// RemoveOrphans, as the next worker runs it, removes those and leaves live
// ones alone.
func TestRemoveOrphans(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("WORKSPACE_ORPHAN_DATA_DIR"); dir != "" {
		// The killed worker: check out, say where, die without cleaning up.
		m := workspace.NewManager(dir, workspace.Options{SpareTrees: 1})
		w, err := m.Checkout(context.Background(), workspace.CheckoutOptions{Repo: "octo/orphan",
			Remote: workspace.Remote{URL: os.Getenv("WORKSPACE_ORPHAN_URL"), Token: token}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		m.WaitSpares()
		fmt.Println(w.Dir())
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/orphan", map[string]string{"a.txt": "a\n"})
	live := e.checkout(t, "octo/orphan", "main")
	liveSpare := e.oneSpare(t, "octo/orphan")

	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRemoveOrphans$")
	cmd.Env = append(os.Environ(), "WORKSPACE_ORPHAN_DATA_DIR="+e.dataDir, "WORKSPACE_ORPHAN_URL="+e.srv.RepoURL("octo/orphan"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	orphan := strings.TrimSpace(string(out))
	if _, statErr := os.Stat(orphan); orphan == "" || statErr != nil {
		t.Fatalf("the killed worker left no workspace (%v, %v): %s", err, statErr, stderr.String())
	}
	if s := e.spares(t, "octo/orphan"); len(s) != 2 {
		t.Fatalf("spares %q, want the live one and the killed worker's", s)
	}

	n, err := e.m.RemoveOrphans()
	if err != nil || n != 2 {
		t.Fatalf("RemoveOrphans() = %d, %v; want 2", n, err)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("orphaned workspace still there: %v", err)
	}
	if s := e.spares(t, "octo/orphan"); len(s) != 1 || s[0] != liveSpare {
		t.Errorf("spares %q, want only the live %s", s, liveSpare)
	}
	if _, err := live.Diff(t.Context()); err != nil {
		t.Errorf("the live workspace was harmed: %v", err)
	}
	if n, err := e.m.RemoveOrphans(); err != nil || n != 0 {
		t.Errorf("second RemoveOrphans() = %d, %v; want 0", n, err)
	}
	// The live spare is intact and used.
	spare := statTree(t, liveSpare)
	assertTaken(t, e.checkout(t, "octo/orphan", "main"), spare)
}

// A task retried on another worker after its push commits the same tree
// with the same date, gets the same commit, and its push finds the branch
// done instead of refusing it as moved.
func TestRetriedTaskPushesNothingNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{})
	e.repo(t, "octo/retry", map[string]string{"a.txt": "a\n"})
	received := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	var shas []string
	for range 2 {
		w := e.checkout(t, "octo/retry", "main")
		mustDo(t, w.Root().WriteFile("a.txt", []byte("fixed\n"), 0o644))
		if _, err := w.Gate(t.Context(), allowAll); err != nil {
			t.Fatal(err)
		}
		sha, err := w.Commit(t.Context(), workspace.CommitOptions{Message: "Fix a", Author: author, Date: received})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Push(t.Context(), e.remote("octo/retry"), "agent/5-retry", ""); err != nil {
			t.Fatalf("push %d: %v", len(shas), err)
		}
		shas = append(shas, sha)
	}
	if shas[0] != shas[1] {
		t.Fatalf("the retry made a different commit: %s, %s", shas[0], shas[1])
	}
	bare := e.srv.RepoDir("octo/retry")
	if got := workspacetest.Git(t, bare, "log", "-1", "--format=%aI %cI", shas[0]); got != "2026-11-30T01:02:03+00:00 2026-11-30T01:02:03+00:00" {
		t.Errorf("commit dates %s", got)
	}
}

// A sandbox writing a huge file gets a clear refusal from Diff before git
// reads it; a diff that grows past the cap anyway (deleting a large base
// file) is refused instead of the worker buffering it.
func TestDiffSizeCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, workspace.Options{MaxDiffSize: 1 << 20, MaxFileSize: 4 << 20})
	big := make([]byte, 3<<20) // random: compresses no better than a build artefact
	rand.NewChaCha8([32]byte{1}).Read(big)
	e.repo(t, "octo/huge", map[string]string{"a.txt": "a\n", "old.bin": string(big)})
	w := e.checkout(t, "octo/huge", "main")
	mustDo(t, w.Root().WriteFile("artefact.bin", big, 0o644))
	_, err := w.Diff(t.Context())
	if app.ErrorCode(err) != app.EPolicy || !strings.Contains(err.Error(), "the new and changed files hold 3 MiB, over the limit of 1 MiB") {
		t.Fatalf("diff of a new 3 MiB file with a 1 MiB cap: %v", err)
	}
	if _, err := w.Gate(t.Context(), allowAll); app.ErrorCode(err) != app.EPolicy {
		t.Fatalf("gate: %v", err)
	}
	mustDo(t, w.Root().Remove("artefact.bin"))
	if d, err := w.Diff(t.Context()); err != nil || d != "" {
		t.Fatalf("diff once the file is gone: %q, %v", d, err)
	}
	mustDo(t, w.Root().Remove("old.bin"))
	if _, err := w.Diff(t.Context()); app.ErrorCode(err) != app.EPolicy || !strings.Contains(err.Error(), "over 1 MiB as a diff") {
		t.Fatalf("diff deleting a 3 MiB file with a 1 MiB cap: %v", err)
	}
}
