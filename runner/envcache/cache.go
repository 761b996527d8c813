// Package envcache keeps the prepared environments of a worker: what a
// repository's setup commands produced — dependency and build caches and
// tools under $HOME, and trees such as node_modules or .venv that setup
// filled inside the work tree — so that the network-less agent phase, its
// checks and the final verification see them, and so that the next task on
// the same repository with the same key skips setup.
//
// An environment is keyed by its owner (the repository's GitHub id, or a
// local checkout), the image's id, the setup commands, whether they had
// network, and the hashes of the repository's lock files and of the files
// setup runs (Key). It records its owner, and Acquire serves it to no
// one else.
// Only the setup phase writes one, into a directory of its own that is
// published with a rename once setup succeeded; from then on it is never
// written again. Containers see it through copy-on-write overlays
// (Env.Overlays): what a task writes into $HOME or node_modules goes to an
// upper directory of its own, removed with it, so no task can poison the
// environment of the next.
//
// The cache is bounded in bytes: publishing an environment evicts the least
// recently used ones until the rest fit. An environment in use holds a
// shared flock on its lock file, and eviction (also "agentbot cache prune"
// from another process) takes an exclusive one without waiting, so an
// environment is never removed under a running container.
//
// The layout under the cache's directory:
//
//	entries/KEY/meta.json   the Entry
//	entries/KEY/lock        flocked shared while in use
//	entries/KEY/home/       $HOME as setup left it
//	entries/KEY/tree/NAME/  a top-level directory setup made in the tree
//	build/                  environments being built, and private ones
//	locks/KEY               flocked exclusively by the one building KEY (Prepare)
//	run/                    the upper and work directories of containers
//	trash/                  entries being removed
//
// Files in an environment belong to the sandbox user, which wrote them, in
// directories it may have made read-only (Go's module cache): removing
// them needs the worker to run as root.
package envcache

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	units "github.com/docker/go-units"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// SeedHome is the shell line a new environment's setup runs first: it
// copies the image's seed of $HOME (deploy/sandbox: the Go image's build
// cache of the standard library) into the environment, so that a task's
// first build is warm. An image without one has nothing to copy.
const SeedHome = `if [ -d /usr/local/share/agentbot/home ]; then cp -R /usr/local/share/agentbot/home/. "$HOME"/; fi`

// DefaultMaxBytes is a worker's default cap on its environments' bytes.
const DefaultMaxBytes = 20 << 30

// TreeDirs are the usual top-level directories of a work tree that setup
// fills (dependencies, virtualenvs), which Key does not search for lock
// files. Every top-level directory setup creates, these or others (a
// build cache such as target/ or .gradle/), moves into the environment,
// and containers see it at the same path; setup's other changes to the
// tree are not kept.
var TreeDirs = []string{"node_modules", ".venv", "venv", "vendor"}

// Entry describes one environment.
type Entry struct {
	Key   string `json:"key"`
	Owner Owner  `json:"owner"`
	// Repo is the repository's name when it was built (owner/name), for
	// people: Owner is what it is served by.
	Repo    string    `json:"repo"`
	Image   string    `json:"image"`
	Size    int64     `json:"size"` // bytes on disk
	Created time.Time `json:"created"`
	Used    time.Time `json:"used"`
	// Dirs are the top-level directories of the tree it holds.
	Dirs []string `json:"dirs,omitempty"`
	// Files are the lock files its key was made of.
	Files []string `json:"files,omitempty"`
}

// Cache is the environments of one worker, in one directory.
type Cache struct {
	dir string
	max int64
	log *slog.Logger
	now func() time.Time
}

// Open returns the cache in dir, creating it, bounded to maxBytes
// (DefaultMaxBytes when zero or less). What a killed worker left half
// built is removed.
func Open(dir string, maxBytes int64, log *slog.Logger) (*Cache, error) {
	if dir == "" {
		return nil, errors.New("envcache: a directory is required")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if log == nil {
		log = slog.Default()
	}
	for _, sub := range []string{"entries", "build", "locks", "run", "trash"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("environment cache: %w", err)
		}
	}
	c := &Cache{dir: dir, max: maxBytes, log: log, now: time.Now}
	c.sweep()
	return c, nil
}

// Max is the cache's cap in bytes.
func (c *Cache) Max() int64 { return c.max }

// sweep removes what no live task uses: the trash, and builds and run
// directories whose lock no process holds. A directory still being made
// has no lock yet (newLockedDir): it is left to its maker unless the maker
// died making it.
func (c *Cache) sweep() {
	removeAll(filepath.Join(c.dir, "trash"), true)
	locks, _ := os.ReadDir(filepath.Join(c.dir, "locks"))
	for _, e := range locks {
		// A build lock nobody holds, left by a killed worker.
		if lock, err := tryLock(filepath.Join(c.dir, "locks", e.Name()), syscall.LOCK_EX); err == nil {
			unlockBuild(lock)
		}
	}
	for _, sub := range []string{"build", "run"} {
		list, _ := os.ReadDir(filepath.Join(c.dir, sub))
		for _, e := range list {
			dir := filepath.Join(c.dir, sub, e.Name())
			if strings.HasPrefix(e.Name(), makingPrefix) {
				if fi, err := e.Info(); err == nil && c.now().Sub(fi.ModTime()) > abandonedAfter {
					removeAll(dir, false)
				}
				continue
			}
			lock, err := tryLock(filepath.Join(dir, "lock"), syscall.LOCK_EX)
			if err != nil {
				continue // in use by a task of a live worker
			}
			if err := removeAll(dir, false); err != nil {
				c.log.Warn("remove a stale environment directory", "dir", dir, "err", err)
			}
			lock.Close()
		}
	}
}

// Env is an environment a task holds: while it does, the environment is
// not evicted. Release it once the task's containers are removed.
type Env struct {
	Entry
	// Cached says it was reused: setup did not run.
	Cached bool

	c       *Cache
	dir     string
	lock    *os.File
	private bool // a build of its own, removed on Release

	mu   sync.Mutex // the attempts of a task start containers side by side
	runs []runDir
}

// runDir is the upper and work directories of one container, flocked while
// it lives so that another process's sweep leaves them alone.
type runDir struct {
	dir  string
	lock *os.File
}

// Acquire returns the environment of key, marked used, or nil when the
// cache has none for owner: an entry recorded for another owner (a
// collision, or a forged meta.json) is never served.
func (c *Cache) Acquire(key string, owner Owner) (*Env, error) {
	if !validKey(key) {
		return nil, fmt.Errorf("environment key %q is not a key", key)
	}
	dir := filepath.Join(c.dir, "entries", key)
	lock, err := tryLock(filepath.Join(dir, "lock"), syscall.LOCK_SH)
	// Only eviction locks a published entry exclusively: it is on its way
	// out, as good as gone.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lock environment %s: %w", key, err)
	}
	// Eviction renames the entry away before removing it: the lock taken
	// must still be the entry's.
	if fi, err := os.Stat(filepath.Join(dir, "lock")); err != nil || !sameFile(lock, fi) {
		lock.Close()
		return nil, nil
	}
	e, err := readEntry(dir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	if e.Owner != owner {
		lock.Close()
		c.log.Warn("environment refused: it belongs to another owner", "key", key, "owner", e.Owner, "repo", e.Repo, "wanted", owner)
		return nil, nil
	}
	e.Used = c.now().UTC()
	if err := writeEntry(dir, e); err != nil {
		lock.Close()
		return nil, err
	}
	return &Env{Entry: e, Cached: true, c: c, dir: dir, lock: lock}, nil
}

// Prepare returns the environment of e.Key for e.Owner: the one the cache
// holds (Env.Cached), or a new one, which setup fills given the new
// build's Home, published, or the caller's alone when private (see
// Builder.Private). Builds are finished as Publish and Private finish them.
//
// Tasks that need the same environment at once build it once: the first
// holds the key's build lock while it builds, across every process using
// the directory, and the others wait for it, then reuse what it published.
// Should it publish nothing (its setup failed, or the entry is another
// owner's), each of them builds its own, side by side, as though there
// were no lock. A private build neither takes the lock nor waits for it.
func (c *Cache) Prepare(ctx context.Context, e Entry, tree string, maxBytes int64, private bool, setup func(home string) error) (*Env, error) {
	env, err := c.Acquire(e.Key, e.Owner)
	if env != nil || err != nil {
		return env, err
	}
	if !private {
		lock, waited, err := c.lockBuild(ctx, e.Key)
		if err != nil {
			return nil, fmt.Errorf("wait for environment %s: %w", e.Key, err)
		}
		env, err := c.Acquire(e.Key, e.Owner)
		if env != nil || err != nil || waited {
			unlockBuild(lock)
		} else {
			defer unlockBuild(lock)
		}
		if env != nil || err != nil {
			return env, err
		}
	}
	b, err := c.Build(e, tree, maxBytes)
	if err != nil {
		return nil, err
	}
	if err := setup(b.Home()); err != nil {
		b.Abort()
		return nil, err
	}
	if private {
		return b.Private()
	}
	return b.Publish()
}

// lockBuild takes the build lock of key, waiting for whoever holds it
// until ctx ends; waited says someone did. The lock file is removed as it
// is unlocked, so a lock taken on a file no longer in place is taken
// again.
func (c *Cache) lockBuild(ctx context.Context, key string) (lock *os.File, waited bool, err error) {
	path := filepath.Join(c.dir, "locks", key)
	for {
		f, err := tryLock(path, syscall.LOCK_EX)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			waited = true
			if f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
				err = lockWait(ctx, f)
			}
		}
		if err != nil {
			return nil, waited, err
		}
		if fi, err := os.Stat(path); err == nil && sameFile(f, fi) {
			return f, waited, nil
		}
		f.Close()
	}
}

// unlockBuild removes a build lock's file, then unlocks it: whoever waits
// on it takes it again in place.
func unlockBuild(lock *os.File) {
	os.Remove(lock.Name())
	lock.Close()
}

// Builder is an environment being built by the setup phase.
type Builder struct {
	c     *Cache
	entry Entry
	dir   string
	lock  *os.File
	tree  string
	max   int64 // bytes the environment may take
	// before holds the top-level names the work tree had before setup:
	// the repository's own, which stay in the tree.
	before map[string]bool
}

// Build starts the environment of e.Key, for e.Owner, for the work tree
// at tree: the setup container mounts Home as $HOME. Finish it with
// Publish, Private or Abort, which refuse it (*TooLargeError) when it
// takes more than maxBytes.
func (c *Cache) Build(e Entry, tree string, maxBytes int64) (*Builder, error) {
	if !validKey(e.Key) {
		return nil, fmt.Errorf("environment key %q is not a key", e.Key)
	}
	if err := e.Owner.check(); err != nil {
		return nil, fmt.Errorf("build environment %s: %w", e.Key, err)
	}
	if maxBytes <= 0 {
		return nil, fmt.Errorf("build environment %s: a size limit is required", e.Key)
	}
	dir, lock, err := newLockedDir(filepath.Join(c.dir, "build"), e.Key+"."+rand.Text())
	if err != nil {
		return nil, fmt.Errorf("build environment %s: %w", e.Key, err)
	}
	b := &Builder{c: c, entry: e, dir: dir, lock: lock, tree: tree, max: maxBytes, before: map[string]bool{}}
	if err := os.Mkdir(filepath.Join(dir, "tree"), 0o755); err != nil {
		b.Abort()
		return nil, fmt.Errorf("build environment %s: %w", e.Key, err)
	}
	if err := shareDir(filepath.Join(dir, "home"), 0o700); err != nil {
		b.Abort()
		return nil, fmt.Errorf("build environment %s: %w", e.Key, err)
	}
	list, err := os.ReadDir(tree)
	if err != nil {
		b.Abort()
		return nil, fmt.Errorf("build environment %s: %w", e.Key, err)
	}
	for _, d := range list {
		b.before[d.Name()] = true
	}
	return b, nil
}

// Home is the directory to mount as the setup container's $HOME.
func (b *Builder) Home() string { return filepath.Join(b.dir, "home") }

// Abort removes the build.
func (b *Builder) Abort() {
	if err := removeAll(b.dir, false); err != nil {
		b.c.log.Warn("remove an aborted environment", "dir", b.dir, "err", err)
	}
	b.lock.Close()
}

// TooLargeError is an environment that takes more than its limit: it is
// removed, never published.
type TooLargeError struct {
	Size, Max int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the prepared environment takes %s, more than its limit of %s: it is not kept",
		units.BytesSize(float64(e.Size)), units.BytesSize(float64(e.Max)))
}

// collect moves the top-level directories setup created out of the work
// tree into the build, and measures it against its limit. A name the
// engine could not mount (a comma or colon in it) stays in the tree.
func (b *Builder) collect() error {
	list, err := os.ReadDir(b.tree)
	if err != nil {
		return fmt.Errorf("read the work tree after setup: %w", err)
	}
	for _, d := range list {
		name := d.Name()
		if b.before[name] || !d.IsDir() || name == ".git" || strings.ContainsAny(name, ",:") {
			continue
		}
		src := filepath.Join(b.tree, name)
		if err := os.Rename(src, filepath.Join(b.dir, "tree", name)); err != nil {
			return fmt.Errorf("keep %s of the setup: %w", name, err)
		}
		b.entry.Dirs = append(b.entry.Dirs, name)
	}
	size, err := diskUsage(b.dir)
	if err != nil {
		return fmt.Errorf("measure environment %s: %w", b.entry.Key, err)
	}
	if size > b.max {
		return &TooLargeError{Size: size, Max: b.max}
	}
	now := b.c.now().UTC()
	b.entry.Size, b.entry.Created, b.entry.Used = size, now, now
	return nil
}

// Publish makes the build the cache's environment of its key and returns
// it, held; then evicts the least recently used environments over the cap.
// When another task published the same key meanwhile, that one is used and
// the build dropped.
func (b *Builder) Publish() (*Env, error) {
	if err := b.collect(); err != nil {
		b.Abort()
		return nil, err
	}
	if err := writeEntry(b.dir, b.entry); err != nil {
		b.Abort()
		return nil, err
	}
	// Held shared from before it is published, so that a task acquiring
	// it the moment it appears never meets the build's exclusive lock.
	if err := syscall.Flock(int(b.lock.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		b.Abort()
		return nil, fmt.Errorf("publish environment %s: %w", b.entry.Key, err)
	}
	dst := filepath.Join(b.c.dir, "entries", b.entry.Key)
	if err := os.Rename(b.dir, dst); err != nil {
		// Another task published the key meanwhile: its environment is
		// used. Should that one be on its way out already, the build
		// serves this task alone.
		env, aerr := b.c.Acquire(b.entry.Key, b.entry.Owner)
		if env != nil || aerr != nil {
			b.Abort()
			return env, aerr
		}
		b.c.log.Info("environment kept private: publishing it failed", "key", b.entry.Key, "err", err)
		return &Env{Entry: b.entry, c: b.c, dir: b.dir, lock: b.lock, private: true}, nil
	}
	env := &Env{Entry: b.entry, c: b.c, dir: dst, lock: b.lock}
	if _, _, err := b.c.trim(); err != nil {
		b.c.log.Warn("evict environments", "err", err)
	}
	return env, nil
}

// Private returns the build as an environment of the task alone: never
// published, removed on Release. It is what a setup whose inputs nobody
// trusts (a pull request's head) builds.
func (b *Builder) Private() (*Env, error) {
	if err := b.collect(); err != nil {
		b.Abort()
		return nil, err
	}
	return &Env{Entry: b.entry, c: b.c, dir: b.dir, lock: b.lock, private: true}, nil
}

// Overlays returns the mounts of one container: $HOME and each tree-local
// directory, copy-on-write over the environment, with upper directories of
// the container's own, removed on Release.
func (e *Env) Overlays() ([]sandbox.Overlay, error) {
	run, lock, err := newLockedDir(filepath.Join(e.c.dir, "run"), e.Key+"."+rand.Text())
	if err != nil {
		return nil, fmt.Errorf("overlay environment %s: %w", e.Key, err)
	}
	e.mu.Lock()
	e.runs = append(e.runs, runDir{dir: run, lock: lock})
	e.mu.Unlock()
	lowers := map[string]string{sandbox.Home: filepath.Join(e.dir, "home")}
	for _, name := range e.Dirs {
		lowers[sandbox.WorkDir+"/"+name] = filepath.Join(e.dir, "tree", name)
	}
	var out []sandbox.Overlay
	for i, target := range slices.Sorted(maps.Keys(lowers)) {
		o := sandbox.Overlay{Target: target, Lower: lowers[target],
			Upper: filepath.Join(run, fmt.Sprint(i), "upper"), Work: filepath.Join(run, fmt.Sprint(i), "work")}
		// The upper directory's owner and mode are the mount's root's.
		if err := shareDir(o.Upper, 0o755); err != nil {
			return nil, fmt.Errorf("overlay environment %s: %w", e.Key, err)
		}
		if err := os.MkdirAll(o.Work, 0o700); err != nil {
			return nil, fmt.Errorf("overlay environment %s: %w", e.Key, err)
		}
		out = append(out, o)
	}
	return out, nil
}

// Release removes what the task's containers wrote, and the environment
// itself when it was private; the containers must be gone.
func (e *Env) Release() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, r := range e.runs {
		if err := removeAll(r.dir, false); err != nil {
			errs = append(errs, fmt.Errorf("remove a container's environment changes: %w", err))
		}
		r.lock.Close()
	}
	e.runs = nil
	if e.private {
		if err := removeAll(e.dir, false); err != nil {
			errs = append(errs, fmt.Errorf("remove private environment: %w", err))
		}
	}
	e.lock.Close()
	return errors.Join(errs...)
}

// List returns the cache's environments, most recently used first.
func (c *Cache) List() ([]Entry, error) {
	list, err := os.ReadDir(filepath.Join(c.dir, "entries"))
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	var out []Entry
	for _, d := range list {
		e, err := readEntry(filepath.Join(c.dir, "entries", d.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return b.Used.Compare(a.Used) })
	return out, nil
}

// PruneOptions choose what Prune removes.
type PruneOptions struct {
	Repo  string // only this repository's environments (owner/name)
	Owner string // only the environments of this owner, as Owner.String says it
	All   bool   // every environment, not only what is over the cap
}

// Prune removes environments not in use and returns them: with All,
// Repo or Owner, every one that matches; otherwise the least recently
// used until the rest fit under the cap. busy counts those kept because a
// task uses them.
func (c *Cache) Prune(o PruneOptions) (removed []Entry, busy int, err error) {
	if !o.All && o.Repo == "" && o.Owner == "" {
		return c.trim()
	}
	list, err := c.List()
	if err != nil {
		return nil, 0, err
	}
	for _, e := range list {
		if o.Repo != "" && !strings.EqualFold(e.Repo, o.Repo) || o.Owner != "" && e.Owner.String() != o.Owner {
			continue
		}
		ok, err := c.remove(e.Key)
		if err != nil {
			return removed, busy, err
		}
		if ok {
			removed = append(removed, e)
		} else {
			busy++
		}
	}
	return removed, busy, nil
}

// trim evicts the least recently used environments not in use until the
// rest fit under the cap.
func (c *Cache) trim() (removed []Entry, busy int, err error) {
	list, err := c.List()
	if err != nil {
		return nil, 0, err
	}
	var total int64
	for _, e := range list {
		total += e.Size
	}
	for i := len(list) - 1; i >= 0 && total > c.max; i-- {
		e := list[i]
		ok, err := c.remove(e.Key)
		if err != nil {
			return removed, busy, err
		}
		if !ok {
			busy++
			continue
		}
		total -= e.Size
		removed = append(removed, e)
		c.log.Info("evicted environment", "key", e.Key, "owner", e.Owner, "repo", e.Repo, "size", e.Size, "used", e.Used)
	}
	return removed, busy, nil
}

// remove removes the environment of key unless a task holds it, and
// reports whether it did.
func (c *Cache) remove(key string) (bool, error) {
	dir := filepath.Join(c.dir, "entries", key)
	lock, err := tryLock(filepath.Join(dir, "lock"), syscall.LOCK_EX)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lock environment %s: %w", key, err)
	}
	defer lock.Close()
	// Another eviction may have removed it between our open and our lock.
	if fi, err := os.Stat(filepath.Join(dir, "lock")); err != nil || !sameFile(lock, fi) {
		return errors.Is(err, fs.ErrNotExist), nil
	}
	// Out of entries/ first, so that nobody acquires it half removed.
	trash := filepath.Join(c.dir, "trash", key+"."+rand.Text())
	if err := os.Rename(dir, trash); err != nil {
		return false, fmt.Errorf("remove environment %s: %w", key, err)
	}
	if err := removeAll(trash, false); err != nil {
		return true, fmt.Errorf("remove environment %s: %w", key, err)
	}
	return true, nil
}
