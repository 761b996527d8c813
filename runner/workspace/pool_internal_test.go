package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/workspace/workspacetest"
)

// A repository's spare trees go once it has been unused for the TTL, and
// only then; other repositories keep theirs, and the next checkout of the
// evicted one starts a new pool.
func TestEvictIdlePool(t *testing.T) {
	t.Parallel()
	srv := workspacetest.NewServer(t, "tok")
	m := NewManager(t.TempDir(), Options{SpareTrees: 1})
	t.Cleanup(func() { m.Close() })
	checkout := func(repo string) {
		t.Helper()
		w, err := m.Checkout(t.Context(), CheckoutOptions{Repo: repo, Remote: Remote{URL: srv.RepoURL(repo), Token: "tok"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		m.WaitSpares()
	}
	spares := func(repo string) []*spare {
		m.mu.Lock()
		defer m.mu.Unlock()
		if p := m.pools[repo]; p != nil {
			return append([]*spare(nil), p.spares...)
		}
		return nil
	}
	pool := func(repo string) *pool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.pools[repo]
	}
	for _, repo := range []string{"o/idle", "o/busy"} {
		srv.CreateRepo(t, repo, func(dir string) {
			if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		checkout(repo)
	}
	idle := spares("o/idle")
	if len(idle) != 1 || len(spares("o/busy")) != 1 {
		t.Fatalf("spares: idle %v, busy %v; want one each", idle, spares("o/busy"))
	}

	p := pool("o/idle")
	m.evictIfIdle(p) // used just now
	if got := spares("o/idle"); len(got) != 1 {
		t.Fatalf("a repository in use lost its spares: %v", got)
	}
	m.mu.Lock()
	p.lastUsed = time.Now().Add(-2 * m.spareTTL)
	m.mu.Unlock()
	m.evictIfIdle(p)
	if pool("o/idle") != nil {
		t.Fatal("the idle pool is still there")
	}
	if _, err := os.Stat(idle[0].dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the idle repository's spare is still on disk: %v", err)
	}
	if _, err := os.Stat(idle[0].lock.Name()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the idle repository's spare lock is still on disk: %v", err)
	}
	if got := spares("o/busy"); len(got) != 1 {
		t.Fatalf("another repository lost its spares: %v", got)
	}

	checkout("o/idle")
	if got := spares("o/idle"); len(got) != 1 || pool("o/idle") == p {
		t.Fatalf("after a new checkout: pool %p (evicted %p), spares %v", pool("o/idle"), p, got)
	}
}
