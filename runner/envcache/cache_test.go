package envcache

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

func TestKey(t *testing.T) {
	t.Parallel()
	base := fstest.MapFS{
		"go.mod":                             {Data: []byte("module x\n")},
		"go.sum":                             {Data: []byte("a v1 h1:x\n")},
		"web/package-lock.json":              {Data: []byte("{}")},
		"requirements-dev.txt":               {Data: []byte("pytest\n")},
		"node_modules/dep/package-lock.json": {Data: []byte("ignored")},
		"main.go":                            {Data: []byte("package x\n")},
	}
	in := KeyInput{ImageID: "sha256:1", Setup: []string{"go mod download"}}
	key, files, err := Key(in, base)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"go.sum", "requirements-dev.txt", "web/package-lock.json"}; !slices.Equal(files, want) {
		t.Fatalf("files %q, want %q", files, want)
	}
	if !validKey(key) {
		t.Fatalf("key %q", key)
	}
	same := func(fsys fstest.MapFS, in KeyInput) bool {
		k, _, err := Key(in, fsys)
		if err != nil {
			t.Fatal(err)
		}
		return k == key
	}
	with := func(name, data string) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range base {
			m[k] = v
		}
		m[name] = &fstest.MapFile{Data: []byte(data)}
		return m
	}
	if !same(with("main.go", "package x // changed\n"), in) {
		t.Error("a source file changed the key")
	}
	if !same(with("node_modules/x/yarn.lock", "x"), in) {
		t.Error("a lock file inside node_modules changed the key")
	}
	for name, changed := range map[string]bool{
		"go.sum changed":      !same(with("go.sum", "b v2 h1:y\n"), in),
		"a new lock file":     !same(with("sub/Cargo.lock", "x"), in),
		"another image":       !same(base, KeyInput{ImageID: "sha256:2", Setup: in.Setup}),
		"other setup":         !same(base, KeyInput{ImageID: in.ImageID, Setup: []string{"go mod download", "true"}}),
		"setup split apart":   !same(base, KeyInput{ImageID: in.ImageID, Setup: []string{"go mod", "download"}}),
		"network":             !same(base, KeyInput{ImageID: in.ImageID, Setup: in.Setup, Network: true}),
		"a policy's key file": !same(with("tools.lock", "x"), KeyInput{ImageID: in.ImageID, Setup: in.Setup, Patterns: []string{"*.lock"}}),
	} {
		if !changed {
			t.Errorf("%s: the key did not change", name)
		}
	}
	if _, _, err := Key(KeyInput{Patterns: []string{"[bad"}}, base); err == nil || !strings.Contains(err.Error(), "[bad") {
		t.Errorf("bad pattern: %v", err)
	}
}

func newCache(t *testing.T, max int64) *Cache {
	t.Helper()
	c, err := Open(t.TempDir(), max, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// build publishes an environment of key holding size bytes in $HOME.
func build(t *testing.T, c *Cache, repo, key string, size int) *Env {
	t.Helper()
	b, err := c.Build(Entry{Key: key, Repo: repo}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.Home(), "blob"), make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func keys(t *testing.T, c *Cache) []string {
	t.Helper()
	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Key)
	}
	return out
}

func TestBuildAndReuse(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	tree := t.TempDir()
	os.Mkdir(filepath.Join(tree, "vendor"), 0o755) // the repository's own
	os.MkdirAll(filepath.Join(tree, "node_modules", "dep"), 0o755)
	b, err := c.Build(Entry{Key: "00000000000000aa", Repo: "acme/app"}, tree)
	if err != nil {
		t.Fatal(err)
	}
	// Made by setup after Build looked.
	os.MkdirAll(filepath.Join(tree, ".venv", "bin"), 0o755)
	os.MkdirAll(filepath.Join(tree, ".cache"), 0o755)
	os.MkdirAll(filepath.Join(tree, "a,b"), 0o755)
	os.WriteFile(filepath.Join(tree, "notes.txt"), nil, 0o644)
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	if env.Cached || !slices.Equal(env.Dirs, []string{".cache", ".venv"}) {
		t.Fatalf("published %+v", env.Entry)
	}
	if _, err := os.Stat(filepath.Join(tree, ".venv")); err == nil {
		t.Error(".venv stayed in the work tree")
	}
	if _, err := os.Stat(filepath.Join(tree, "node_modules")); err != nil {
		t.Error("node_modules the tree had before setup was moved")
	}
	ov, err := env.Overlays()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"notes.txt", "a,b"} {
		if _, err := os.Stat(filepath.Join(tree, name)); err != nil {
			t.Errorf("%s left the work tree: %v", name, err)
		}
	}
	if len(ov) != 3 || ov[0].Target != "/home/sandbox" || ov[1].Target != "/workspace/.cache" || ov[2].Target != "/workspace/.venv" {
		t.Fatalf("overlays %+v", ov)
	}
	for _, o := range ov {
		if fi, err := os.Stat(o.Upper); err != nil || !fi.IsDir() {
			t.Fatalf("upper %s: %v", o.Upper, err)
		}
	}
	if err := env.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ov[0].Upper); err == nil {
		t.Error("the container's upper directory outlived Release")
	}
	again, err := c.Acquire("00000000000000aa")
	if err != nil || again == nil || !again.Cached || !slices.Equal(again.Dirs, []string{".cache", ".venv"}) {
		t.Fatalf("acquire: %+v, %v", again, err)
	}
	again.Release()
	if env, err := c.Acquire("00000000000000bb"); env != nil || err != nil {
		t.Fatalf("acquire a missing key: %v, %v", env, err)
	}
	if _, err := c.Acquire("../../etc"); err == nil {
		t.Fatal("a key that is a path was accepted")
	}
}

// Tasks of one repository start together: each acquires the environment
// or, finding none, builds and publishes it; none may fail because another
// is publishing or evicting it at that moment.
func TestConcurrentTasksShareAnEnvironment(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	const key = "00000000000000ee"
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				env, err := c.Acquire(key)
				if err == nil && env == nil {
					var b *Builder
					if b, err = c.Build(Entry{Key: key}, t.TempDir()); err == nil {
						env, err = b.Publish()
					}
				}
				if err != nil {
					errs <- err
					return
				}
				env.Release()
				if _, err := c.remove(key); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// An entry being evicted is as good as gone: acquiring it finds nothing,
// which makes the task build its own, rather than failing the task.
func TestAcquireDuringEviction(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	b, err := c.Build(Entry{Key: "00000000000000ef"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	env.Release()
	evicting, err := tryLock(filepath.Join(c.dir, "entries", "00000000000000ef", "lock"), syscall.LOCK_EX)
	if err != nil {
		t.Fatal(err)
	}
	defer evicting.Close()
	if env, err := c.Acquire("00000000000000ef"); env != nil || err != nil {
		t.Fatalf("acquire during eviction: %v, %v", env, err)
	}
}

func TestPrivateIsNeverPublished(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	b, err := c.Build(Entry{Key: "00000000000000cc"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env, err := b.Private()
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(t, c); len(got) != 0 {
		t.Fatalf("a private environment is listed: %q", got)
	}
	if again, _ := c.Acquire("00000000000000cc"); again != nil {
		t.Fatal("a private environment was reused")
	}
	env.Release()
	if list, _ := os.ReadDir(filepath.Join(c.dir, "build")); len(list) != 0 {
		t.Fatalf("private environment left behind: %v", list)
	}
}

func TestEvictionKeepsMostRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := newCache(t, 3<<20) // room for about two of 1.5 MiB
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	for _, k := range []string{"000000000000000a", "000000000000000b"} {
		build(t, c, "acme/app", k, 1500<<10).Release()
	}
	// a is used again, so b is now the least recently used.
	env, _ := c.Acquire("000000000000000a")
	env.Release()
	build(t, c, "acme/app", "000000000000000c", 1500<<10).Release()
	if got, want := keys(t, c), []string{"000000000000000c", "000000000000000a"}; !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q", got, want)
	}

	// An environment in use is never evicted, even when least recent.
	held, _ := c.Acquire("000000000000000a")
	build(t, c, "acme/other", "000000000000000d", 1500<<10).Release()
	if got, want := keys(t, c), []string{"000000000000000d", "000000000000000a"}; !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q", got, want)
	}
	removed, busy, err := c.Prune(PruneOptions{All: true})
	if err != nil || busy != 1 || len(removed) != 1 || removed[0].Key != "000000000000000d" {
		t.Fatalf("prune all while one is held: removed %v, busy %d, %v", removed, busy, err)
	}
	held.Release()
	build(t, c, "acme/other", "000000000000000e", 10).Release()
	removed, _, err = c.Prune(PruneOptions{Repo: "ACME/app"})
	if err != nil || len(removed) != 1 || removed[0].Key != "000000000000000a" {
		t.Fatalf("prune a repository: removed %v, %v", removed, err)
	}
	if got := keys(t, c); !slices.Equal(got, []string{"000000000000000e"}) {
		t.Fatalf("left %q", got)
	}
}

func TestOpenSweepsLeftovers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := Open(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Build(Entry{Key: "00000000000000ab"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "build", "dead.1")
	os.MkdirAll(stale, 0o755)
	// Directories being made: one whose maker may still lock it, one
	// whose maker died an hour ago.
	making, abandoned := filepath.Join(dir, "run", makingPrefix+"1"), filepath.Join(dir, "run", makingPrefix+"2")
	os.MkdirAll(making, 0o755)
	os.MkdirAll(abandoned, 0o755)
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(abandoned, hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a build no process holds survived Open")
	}
	if _, err := os.Stat(making); err != nil {
		t.Error("a directory being made was swept")
	}
	if _, err := os.Stat(abandoned); err == nil {
		t.Error("a directory its maker abandoned an hour ago survived Open")
	}
	if _, err := os.Stat(b.Home()); err != nil {
		t.Error("a build in progress was removed")
	}
	b.Abort()
	if _, err := Open("", 0, nil); err == nil {
		t.Error("an empty directory was accepted")
	}
}

func TestOpenLeavesRunningContainersAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := Open(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := build(t, c, "acme/app", "00000000000000ef", 10)
	ov, err := env.Overlays()
	if err != nil {
		t.Fatal(err)
	}
	// "agentbot cache list" opens the cache while the worker's task runs.
	if _, err := Open(dir, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ov[0].Upper); err != nil {
		t.Fatalf("a running container's upper directory was swept: %v", err)
	}
	env.Release()
	if _, err := os.Stat(ov[0].Upper); err == nil {
		t.Fatal("Release left the upper directory")
	}
}

// TestOpenDuringOverlaysAndBuilds: a worker that opens the cache sweeps
// what no process holds while other workers of the machine make their
// containers' directories and start builds; it never takes one being made.
func TestOpenDuringOverlaysAndBuilds(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	env := build(t, c, "acme/a", "00000000000000ad", 10)
	defer env.Release()
	done := make(chan struct{})
	var sweeps sync.WaitGroup
	sweeps.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := Open(c.dir, 0, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var makers sync.WaitGroup
	for range 4 {
		makers.Go(func() {
			for range 100 {
				ov, err := env.Overlays()
				if err != nil {
					t.Errorf("overlays while another worker opens the cache: %v", err)
					return
				}
				for _, o := range ov {
					if _, err := os.Stat(o.Work); err != nil {
						t.Errorf("a container's directory was swept: %v", err)
						return
					}
				}
				b, err := c.Build(Entry{Key: "00000000000000ae"}, t.TempDir())
				if err != nil {
					t.Errorf("build while another worker opens the cache: %v", err)
					return
				}
				if _, err := os.Stat(b.Home()); err != nil {
					t.Errorf("a build was swept: %v", err)
				}
				b.Abort()
			}
		})
	}
	makers.Wait()
	close(done)
	sweeps.Wait()
}
