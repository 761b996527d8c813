package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbot/agentbot/app"
)

// Options tune a Manager; the zero value is usable.
type Options struct {
	Logger *slog.Logger
	// CommandTimeout bounds every git command, clones included. Default 10m.
	CommandTimeout time.Duration
	// MaxFileSize is the gate's cap on the size of any file a change
	// writes, in bytes. Default 1 MiB.
	MaxFileSize int64
	// MaxDiffSize caps a diff in bytes, binary patches included, so that a
	// sandbox writing huge files cannot exhaust the worker's memory through
	// Diff. Default 64 MiB.
	MaxDiffSize int
	// MaxNewFiles caps how many files the work tree may hold beyond the
	// base commit's, checked before git reads any of them. Default 10,000.
	MaxNewFiles int
	// SpareTrees is how many spare work trees the Manager keeps ready per
	// repository (see Checkout); each costs the disk of one checkout of the
	// default branch plus its index. Zero keeps none and starts no
	// background work.
	SpareTrees int
	// SpareTTL is how long a repository may go without a checkout before
	// its spare trees are removed. Default 1h.
	SpareTTL time.Duration
}

// Manager owns the data directory: one bare mirror per repository under
// mirrors/, one directory per task under work/, the spare work trees under
// spares/, and an empty home/ that is HOME for every git command. Close
// stops its background work.
type Manager struct {
	dataDir     string
	git         *gitRunner
	log         *slog.Logger
	maxFileSize int64
	maxDiffSize int
	maxNewFiles int
	spareTrees  int
	spareTTL    time.Duration

	mu     sync.Mutex
	pools  map[string]*pool // by lower-case owner/name
	closed bool
	// bg counts the goroutines that prepare or remove spare trees; bgCtx
	// ends their git commands on Close.
	bg     sync.WaitGroup
	bgCtx  context.Context
	stopBg context.CancelFunc
}

// DefaultDataDir is the data directory used when none is configured:
// agentbot under the user's cache directory.
func DefaultDataDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("default data dir: %w", err)
	}
	return filepath.Join(dir, "agentbot"), nil
}

// NewManager returns a Manager keeping its mirrors and work trees under
// dataDir (DefaultDataDir when empty, or agentbot under the temporary
// directory if the user has no cache directory). Directories are created on
// first use.
func NewManager(dataDir string, opts Options) *Manager {
	if dataDir == "" {
		d, err := DefaultDataDir()
		if err != nil {
			d = filepath.Join(os.TempDir(), "agentbot")
		}
		dataDir = d
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = 10 * time.Minute
	}
	if opts.MaxFileSize <= 0 {
		opts.MaxFileSize = 1 << 20
	}
	if opts.MaxDiffSize <= 0 {
		opts.MaxDiffSize = 64 << 20
	}
	if opts.MaxNewFiles <= 0 {
		opts.MaxNewFiles = 10000
	}
	if opts.SpareTTL <= 0 {
		opts.SpareTTL = time.Hour
	}
	bgCtx, stopBg := context.WithCancel(context.Background())
	return &Manager{
		dataDir:     dataDir,
		git:         newGitRunner(filepath.Join(dataDir, "home"), opts.CommandTimeout, opts.Logger),
		log:         opts.Logger,
		maxFileSize: opts.MaxFileSize,
		maxDiffSize: opts.MaxDiffSize,
		maxNewFiles: opts.MaxNewFiles,
		spareTrees:  opts.SpareTrees,
		spareTTL:    opts.SpareTTL,
		pools:       map[string]*pool{},
		bgCtx:       bgCtx,
		stopBg:      stopBg,
	}
}

// Remote is where a repository is fetched from and pushed to, with the
// installation token that authenticates it. The URL must carry no
// credentials.
type Remote struct {
	URL   string
	Token string
}

// CheckoutOptions say which commit of which repository a task works on.
type CheckoutOptions struct {
	Repo   string // owner/name; names the mirror
	Remote Remote
	// Base is a commit id, or a ref the remote has ("main",
	// "refs/pull/7/head"), resolved once the mirror is up to date. Empty
	// means the mirror's HEAD: the default branch when it was cloned, so
	// callers that know the default branch should name it.
	Base string
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

func (o CheckoutOptions) validate() error {
	owner, name, _ := strings.Cut(o.Repo, "/")
	if !repoName.MatchString(o.Repo) || owner == "." || owner == ".." || name == "." || name == ".." {
		return app.Errorf(app.EInvalid, "repository %q is not owner/name", o.Repo)
	}
	u, err := url.Parse(o.Remote.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return app.Errorf(app.EInvalid, "remote of %s is not an http(s) URL", o.Repo)
	}
	if u.User != nil {
		// A URL credential would be stored in the mirror's config.
		return app.Errorf(app.EInvalid, "remote of %s carries credentials in its URL", o.Repo)
	}
	if strings.HasPrefix(o.Base, "-") {
		return app.Errorf(app.EInvalid, "base %q is not a commit or ref", o.Base)
	}
	return nil
}

// Checkout brings the repository's mirror up to date and returns a fresh
// work tree at the base commit, with its own git dir outside the tree.
//
// The checkout is cheap because nothing is copied: the task's git dir is an
// empty bare repository whose objects/info/alternates points at the mirror,
// and "read-tree -u" writes the base commit's files straight from the
// mirror's packs into the tree. No refs are copied and no .git appears in
// the tree. Commits made in the task land in the task's own object store.
//
// Writing the files is then most of the cost, so a checkout leaves behind,
// in the background, a spare tree of the repository: the same git dir and
// tree, checked out at the mirror's HEAD. The next Checkout of the
// repository renames the spare into place, checks that it is exactly its
// commit, and moves it to its base with read-tree, which writes only the
// files that differ. Without a spare it checks out from scratch.
func (m *Manager) Checkout(ctx context.Context, opts CheckoutOptions) (*Workspace, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	mirror, base, err := m.syncMirror(ctx, opts)
	if err != nil {
		return nil, err
	}
	key := repoKey(opts.Repo)
	// Started on return, so that the spare's files are not written while
	// this checkout writes its own.
	defer m.prepareSpares(key, mirror)
	if s := m.takeSpare(key); s != nil {
		w, err := m.fromSpare(ctx, s, base)
		if err == nil {
			return w, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("check out %s at %s: %w", opts.Repo, base, err)
		}
		m.log.Warn("spare work tree discarded", "repo", opts.Repo, "err", err)
	}
	w, err := m.newWorkspace(ctx, mirror, base)
	if err != nil {
		return nil, fmt.Errorf("check out %s at %s: %w", opts.Repo, base, err)
	}
	return w, nil
}

// repoKey names a repository's mirror and spares. GitHub names are
// case-insensitive: one mirror serves every spelling.
func repoKey(repo string) string { return strings.ToLower(repo) }

func (m *Manager) mirrorDir(key string) string {
	return filepath.Join(m.dataDir, "mirrors", filepath.FromSlash(key)+".git")
}

// syncMirror clones or fetches the repository's mirror under a per-repository
// lock and resolves the base commit in it.
func (m *Manager) syncMirror(ctx context.Context, opts CheckoutOptions) (dir, base string, err error) {
	dir = m.mirrorDir(repoKey(opts.Repo))
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return "", "", fmt.Errorf("mirror %s: %w", opts.Repo, err)
	}
	if err := os.MkdirAll(filepath.Join(m.dataDir, "home"), 0o700); err != nil {
		return "", "", fmt.Errorf("mirror %s: %w", opts.Repo, err)
	}
	unlock, err := lockFile(ctx, dir+".lock")
	if err != nil {
		return "", "", fmt.Errorf("lock mirror %s: %w", opts.Repo, err)
	}
	defer unlock()

	_, err = os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := m.cloneMirror(ctx, opts.Remote, dir); err != nil {
			return "", "", fmt.Errorf("clone %s: %w", opts.Repo, err)
		}
	case err != nil:
		return "", "", fmt.Errorf("mirror %s: %w", opts.Repo, err)
	case isCommitID(opts.Base):
		// Commit ids are immutable: a mirror that has the base need not
		// ask the remote.
		if base, err := m.resolve(ctx, dir, opts.Base); err == nil {
			return dir, base, nil
		}
		fallthrough
	default:
		_, err := m.git.run(ctx, gitCall{gitDir: dir, token: opts.Remote.Token,
			args: []string{"fetch", "--quiet", "--prune", opts.Remote.URL, "+refs/*:refs/*"}})
		if err != nil {
			return "", "", fmt.Errorf("fetch %s: %w", opts.Repo, err)
		}
	}
	base, err = m.resolve(ctx, dir, opts.Base)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", fmt.Errorf("resolve %s in %s: %w", opts.Base, opts.Repo, err)
		}
		return "", "", app.Errorf(app.ENotFound, "%s has no commit %q", opts.Repo, opts.Base)
	}
	return dir, base, nil
}

// cloneMirror clones into a temporary directory and renames it into place,
// so that an interrupted clone never passes for a mirror.
func (m *Manager) cloneMirror(ctx context.Context, remote Remote, dir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".clone-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	_, err = m.git.run(ctx, gitCall{token: remote.Token,
		args: []string{"clone", "--quiet", "--mirror", "--", remote.URL, tmp}})
	if err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// resolve returns the commit that rev (empty: HEAD) names in the mirror.
func (m *Manager) resolve(ctx context.Context, mirror, rev string) (string, error) {
	if rev == "" {
		rev = "HEAD"
	}
	return m.git.runString(ctx, gitCall{gitDir: mirror,
		args: []string{"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"}})
}

var commitID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

func isCommitID(s string) bool { return commitID.MatchString(s) }

// newWorkspace makes the task's directory: git/ (host-owned git dir) and
// tree/ (the work tree the sandbox mounts), and checks base out into it.
func (m *Manager) newWorkspace(ctx context.Context, mirror, base string) (_ *Workspace, err error) {
	lock, dir, err := lockedName(filepath.Join(m.dataDir, "work"), "task")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			unlock(lock)
		}
	}()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if err := m.checkoutInto(ctx, dir, mirror, base); err != nil {
		return nil, err
	}
	return m.openWorkspace(lock, dir, base)
}

// openWorkspace returns the Workspace of a task directory checked out at
// base, whose lock the caller holds.
func (m *Manager) openWorkspace(lock *os.File, dir, base string) (*Workspace, error) {
	w := &Workspace{
		m:      m,
		lock:   lock,
		dir:    dir,
		gitDir: filepath.Join(dir, "git"),
		tree:   filepath.Join(dir, "tree"),
		base:   base,
		head:   base,
	}
	var err error
	if w.root, err = os.OpenRoot(w.tree); err != nil {
		return nil, err
	}
	return w, nil
}

// checkoutInto makes, in the empty directory dir, git/ (a git dir that
// borrows the mirror's objects) and tree/ checked out at commit.
func (m *Manager) checkoutInto(ctx context.Context, dir, mirror, commit string) error {
	gitDir := filepath.Join(dir, "git")
	if err := m.initGitDir(ctx, gitDir, mirror); err != nil {
		return err
	}
	tree := filepath.Join(dir, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	return m.moveTo(ctx, gitDir, tree, commit)
}

// initGitDir makes a task's git dir: bare, with the neutral attributes,
// and borrowing the objects of mirror unless it is "".
func (m *Manager) initGitDir(ctx context.Context, gitDir, mirror string) error {
	// --template= leaves out the sample hooks and the default excludes.
	if _, err := m.git.run(ctx, gitCall{args: []string{"init", "--quiet", "--bare", "--template=", gitDir}}); err != nil {
		return err
	}
	files := map[string]string{"info/attributes": neutralAttributes}
	if mirror != "" {
		files["objects/info/alternates"] = filepath.Join(mirror, "objects") + "\n"
	}
	for name, content := range files {
		p := filepath.Join(gitDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// moveTo makes the index and the tree those of commit and points HEAD at
// it. "read-tree --reset -u" keeps the files whose index entry is the
// same and whose stat data still matches, so it writes only what differs
// from the index; in an empty tree, that is every file.
func (m *Manager) moveTo(ctx context.Context, gitDir, tree, commit string) error {
	// Writing files is most of a checkout's cost: let git spread it over
	// the CPUs.
	if _, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree,
		args: []string{"-c", "checkout.workers=0", "read-tree", "--reset", "-u", commit}}); err != nil {
		return err
	}
	_, err := m.git.run(ctx, gitCall{gitDir: gitDir, args: []string{"update-ref", "--no-deref", "HEAD", commit}})
	return err
}

// lockedName creates parent/prefix-*.lock and flocks it; the lock, held
// for as long as the file stays open, tells RemoveOrphans that the
// directory of the same name without ".lock" has a live owner. It is taken
// before that directory exists, which the caller makes. The file is made
// and locked under a name RemoveOrphans passes over, then renamed: found
// unlocked under its final name, it would be taken for a dead worker's.
func lockedName(parent, prefix string) (lock *os.File, dir string, err error) {
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, "", err
	}
	lock, err = os.CreateTemp(parent, prefix+"-*.lock"+makingSuffix)
	if err != nil {
		return nil, "", err
	}
	err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if err == nil {
		err = os.Rename(lock.Name(), lockPath(lock))
	}
	if err != nil {
		os.Remove(lock.Name())
		lock.Close()
		return nil, "", fmt.Errorf("lock %s: %w", lockPath(lock), err)
	}
	return lock, strings.TrimSuffix(lockPath(lock), ".lock"), nil
}

// makingSuffix ends the name of a lock file of lockedName's while it is
// being taken.
const makingSuffix = ".making"

// lockPath is where a lock of lockedName's is, once taken.
func lockPath(lock *os.File) string { return strings.TrimSuffix(lock.Name(), makingSuffix) }

// unlock removes and releases a lock from lockedName, once its directory
// is gone or in other hands.
func unlock(lock *os.File) {
	os.Remove(lockPath(lock))
	lock.Close()
}

// RemoveOrphans removes the work trees whose process is gone, as a worker
// killed mid-task leaves them: task workspaces, and spare trees ready or
// half made. Every live one holds a lock that the kernel releases when its
// process dies. It is safe to run while other workers share the data dir,
// and returns how many trees it removed.
func (m *Manager) RemoveOrphans() (int, error) {
	var locks []string
	for _, pattern := range []string{"work/task-*.lock", "spares/*/*/spare-*.lock"} {
		l, err := filepath.Glob(filepath.Join(m.dataDir, filepath.FromSlash(pattern)))
		if err != nil {
			return 0, err
		}
		locks = append(locks, l...)
	}
	removed := 0
	var errs []error
	for _, name := range locks {
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			continue // removed meanwhile by its owner
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close() // alive
			continue
		}
		if !stillNamed(f, name) {
			f.Close() // its owner unlocked it since: done with it, not dead
			continue
		}
		if err := os.RemoveAll(strings.TrimSuffix(name, ".lock")); err != nil {
			errs = append(errs, fmt.Errorf("remove orphaned work tree: %w", err))
		} else {
			os.Remove(name)
			removed++
		}
		f.Close()
	}
	return removed, errors.Join(errs...)
}

// stillNamed tells whether name is still the file f has open.
func stillNamed(f *os.File, name string) bool {
	fi, err := os.Stat(name)
	if err != nil {
		return false
	}
	open, err := f.Stat()
	return err == nil && os.SameFile(fi, open)
}

// lockFile takes an exclusive flock on path, polling so that ctx can end
// the wait. The lock holds across processes sharing the data dir as well as
// across goroutines, since every call opens its own file description.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
