// Package workspace is the host side of a task's repository: how it gets
// from GitHub into a work tree the sandbox can mount, and how the agent's
// change gets back, without a credential or the host ever being exposed.
//
// A Manager keeps one bare mirror per repository in its data directory
// ("git clone --mirror" once, "git fetch --prune" later, under a lock per
// repository). Manager.Checkout gives each task a Workspace: a fresh work
// tree at the base commit and, beside it, a git dir that borrows the
// mirror's objects. The work tree holds no .git; only the tree is mounted
// into the container, which may write anything into it.
//
// Writing thousands of files is most of a warm checkout, so after each
// checkout the Manager prepares, in the background, a spare work tree of the
// repository at its default branch (Options.SpareTrees per repository, each
// the disk of one checkout; none by default). The next Checkout takes it with a rename and
// moves it to its base writing only the files that differ. A spare is never
// mounted before a task takes it, and is checked to be exactly its commit
// when taken; a task's tree is never reused. Spares go with Manager.Close,
// after Options.SpareTTL without a checkout of their repository, and through
// Manager.RemoveOrphans when their worker was killed.
//
// Everything the host does with the tree assumes that hostile content:
//
//   - git runs only as "git --git-dir=<host-owned> --work-tree=<tree>", with
//     hooks and fsmonitor off, no system or global config, HOME an empty
//     host directory, a timeout, and an info/attributes that neutralises
//     any .gitattributes in the tree (no filters, textconv or drivers);
//   - the token reaches git only through the environment of the one command
//     that talks to the remote (an http.extraHeader), never a file, URL,
//     argv or log line;
//   - Root gives os.Root access to the tree, so symlinks cannot lead out;
//   - before git reads the tree, a scan of directory entries and lstat
//     results refuses FIFOs, sockets and devices, names git would refuse
//     (.GIT), new or changed files over the size cap and too many or too
//     large new files, so git never hashes a 512 MiB file or fails on
//     what the tree holds: each of these, and a "git add" that fails on a
//     path anyway, is an *app.Error the model and the user read.
//
// Workspace.Diff is the change against the base commit (persisted after
// every agent step; Workspace.Apply restores it on another worker).
// Workspace.Gate recomputes it and checks it against the repository's
// policy; Workspace.Commit commits exactly the tree the gate passed, and
// Workspace.Push pushes it with a lease. Workspace.Close removes the tree and
// the task's git dir; Manager.RemoveOrphans removes those that a killed
// worker left behind.
package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbot/agentbot/app"
)

// ErrNoChanges is returned by Commit when the gated tree is the base tree.
var ErrNoChanges = errors.New("no changes to commit")

// Workspace is one task's checkout. Its methods are safe for concurrent use;
// git operations on it run one at a time.
type Workspace struct {
	m      *Manager
	lock   *os.File // flocked while the workspace lives; see RemoveOrphans
	dir    string   // holds git/ and tree/
	gitDir string
	tree   string
	root   *os.Root

	mu    sync.Mutex
	base  string // the commit the task started from
	head  string // the last commit made, base before any
	gated string // the tree object the last passing Gate checked
	// baseSize maps the base commit's paths to their sizes, once read.
	baseSize map[string]int64
}

// Dir is the work tree's path on the host: the directory to mount into the
// sandbox. Host code reads and writes it through Root, never by path.
func (w *Workspace) Dir() string { return w.tree }

// Root opens the work tree for host-side reads and writes that cannot follow
// a symlink out of it. It stays valid until Close.
func (w *Workspace) Root() *os.Root { return w.root }

// Base is the commit the task started from.
func (w *Workspace) Base() string { return w.base }

// Head is the last commit made by Commit, or Base.
func (w *Workspace) Head() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.head
}

// git runs a command against the task's git dir and work tree.
func (w *Workspace) git(ctx context.Context, c gitCall) ([]byte, error) {
	c.gitDir, c.workTree = w.gitDir, w.tree
	return w.m.git.run(ctx, c)
}

func (w *Workspace) gitString(ctx context.Context, c gitCall) (string, error) {
	out, err := w.git(ctx, c)
	return strings.TrimSpace(string(out)), err
}

// snapshot stages the whole work tree in the host's index and writes it as
// a tree object, which is what Diff, Gate and Commit work from. The tree is
// scanned first (see scanTree), and what git still refuses to record is a
// refusal too: either way the model and the user read what to remove, and
// the task is not retried on a tree that would fail again.
func (w *Workspace) snapshot(ctx context.Context) (string, error) {
	if err := w.scanTree(ctx); err != nil {
		return "", err
	}
	if _, err := w.git(ctx, gitCall{args: []string{"add", "--all", "--", "."}}); err != nil {
		if lines := treeRefusals(err); len(lines) > 0 {
			return "", app.Errorf(app.EPolicy, "git cannot record the work tree: %s; rename or remove these files", strings.Join(lines, "; "))
		}
		return "", fmt.Errorf("stage work tree: %w", err)
	}
	tree, err := w.gitString(ctx, gitCall{args: []string{"write-tree"}})
	if err != nil {
		return "", fmt.Errorf("write tree: %w", err)
	}
	return tree, nil
}

// treeRefusals returns the lines of a failed "git add" that blame a path
// of the tree (a name git refuses, a file that changed while read), at
// most five; none when the failure is the host's.
func treeRefusals(err error) []string {
	var lines []string
	for line := range strings.Lines(err.Error()) {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "error: "); i >= 0 {
			line = line[i+len("error: "):]
		}
		if strings.HasPrefix(line, "invalid path ") || strings.HasPrefix(line, "unable to index file") ||
			strings.HasPrefix(line, "short read while indexing") || strings.HasPrefix(line, "open(") {
			lines = append(lines, line)
		}
	}
	return lines[:min(len(lines), 5)]
}

// scanTree checks the work tree before git reads it, so that nothing git
// would hash or hang on gets that far: no nested repository (git would
// record it as a submodule, or refuse the whole add), no name git refuses
// as a spelling of .git, no FIFO, socket or device (git skips them
// silently; the sandbox must not leave them for the host), no new or
// changed file over the size cap, no more than MaxNewFiles files beyond
// the base's, and no more than MaxDiffSize bytes in new and changed files.
// A file is taken as unchanged when the base holds it at the same size;
// git then compares its content. It reads directory entries and lstat
// results only, never a file's content.
func (w *Workspace) scanTree(ctx context.Context) error {
	base, err := w.baseSizes(ctx)
	if err != nil {
		return err
	}
	var problems []string
	var newFiles int
	var newBytes int64
	err = fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("scan work tree: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("scan work tree: %w", err)
		}
		if p == ".git" {
			// git ignores a .git at the top, using the host's git dir.
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if strings.EqualFold(d.Name(), ".git") {
			if d.Name() == ".git" {
				return app.Errorf(app.EPolicy, "%s is a nested git repository; submodules and nested repositories are not allowed", p)
			}
			problems = append(problems, fmt.Sprintf("%s is named like .git, which git refuses to record", p))
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		t := d.Type()
		switch {
		case t.IsDir():
			return nil
		case t&fs.ModeSymlink != 0:
			if _, ok := base[p]; !ok {
				newFiles++
			}
			return nil
		case !t.IsRegular():
			problems = append(problems, fmt.Sprintf("%s is %s; only regular files, directories and symlinks can be committed", p, fileKind(t)))
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while scanned: git will not see it either
		}
		if err != nil {
			return fmt.Errorf("scan work tree: %w", err)
		}
		size, inBase := base[p]
		if !inBase {
			newFiles++
		}
		if inBase && size == fi.Size() {
			return nil
		}
		if fi.Size() > w.m.maxFileSize {
			problems = append(problems, fmt.Sprintf("%s is %d bytes, over the limit of %d bytes per file", p, fi.Size(), w.m.maxFileSize))
		}
		newBytes += fi.Size()
		return nil
	})
	if err != nil {
		return err
	}
	if newFiles > w.m.maxNewFiles {
		problems = append(problems, fmt.Sprintf("the work tree holds %d files more than the base, over the limit of %d", newFiles, w.m.maxNewFiles))
	}
	if newBytes > int64(w.m.maxDiffSize) {
		problems = append(problems, fmt.Sprintf("the new and changed files hold %d MiB, over the limit of %d MiB", newBytes>>20, w.m.maxDiffSize>>20))
	}
	if n := len(problems); n > 0 {
		if n > maxViolations {
			problems = append(problems[:maxViolations], fmt.Sprintf("and %d more", n-maxViolations))
		}
		return app.Errorf(app.EPolicy, "the work tree cannot be recorded: %s; remove these files", strings.Join(problems, "; "))
	}
	return nil
}

// fileKind names a non-regular file's type for a refusal.
func fileKind(t fs.FileMode) string {
	switch {
	case t&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// baseSizes maps each path of the base commit to its size in bytes (-1 for
// what is not a blob), read once per workspace.
func (w *Workspace) baseSizes(ctx context.Context) (map[string]int64, error) {
	if w.baseSize != nil {
		return w.baseSize, nil
	}
	out, err := w.git(ctx, gitCall{args: []string{"ls-tree", "-r", "-l", "-z", "--full-tree", w.base}})
	if err != nil {
		return nil, fmt.Errorf("list base tree: %w", err)
	}
	sizes := make(map[string]int64)
	for _, entry := range bytes.Split(out, []byte{0}) {
		meta, name, ok := strings.Cut(string(entry), "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 4 {
			continue
		}
		size, err := strconv.ParseInt(fields[3], 10, 64)
		if err != nil {
			size = -1
		}
		sizes[name] = size
	}
	w.baseSize = sizes
	return sizes, nil
}

// diff is the full binary diff from the base commit to tree: new, deleted,
// renamed and mode-changed files, binary files as git binary patches. It
// compares two tree objects, so nothing in the work tree takes part.
func (w *Workspace) diff(ctx context.Context, tree string) (string, error) {
	out, err := w.git(ctx, gitCall{maxStdout: w.m.maxDiffSize, args: []string{"diff", "--binary", "--full-index",
		"--find-renames", "--no-color", "--no-textconv", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/",
		w.base, tree, "--"}})
	if errors.Is(err, errOutputTooLarge) {
		return "", app.Errorf(app.EPolicy, "the change is over %d MiB as a diff; remove large or generated files from the work tree", w.m.maxDiffSize>>20)
	}
	if err != nil {
		return "", fmt.Errorf("diff %s: %w", w.base, err)
	}
	return string(out), nil
}

// Diff returns the unified diff of the work tree against the base commit,
// in the form Apply takes back.
func (w *Workspace) Diff(ctx context.Context) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tree, err := w.snapshot(ctx)
	if err != nil {
		return "", err
	}
	return w.diff(ctx, tree)
}

// Apply applies a diff made by Diff to the work tree and the index. It is
// meant for a fresh checkout of the same base, before the sandbox starts:
// either the whole diff applies or nothing changes.
func (w *Workspace) Apply(ctx context.Context, diff string) error {
	if diff == "" {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// "apply --index" wants the index's stat data to match the tree, which
	// a fresh checkout's index does not always record.
	if _, err := w.git(ctx, gitCall{args: []string{"update-index", "-q", "--refresh"}}); err != nil {
		return fmt.Errorf("apply saved diff: refresh index: %w", err)
	}
	_, err := w.git(ctx, gitCall{stdin: strings.NewReader(diff),
		args: []string{"apply", "--index", "--whitespace=nowarn", "-"}})
	if err != nil {
		return fmt.Errorf("apply saved diff onto %s: %w", w.base, err)
	}
	return nil
}

// Signature names a commit's author or co-author.
type Signature struct {
	Name  string
	Email string
}

func (s Signature) validate(role string) error {
	if s.Name == "" || s.Email == "" || strings.ContainsAny(s.Name+s.Email, "<>\n\r\x00") {
		return app.Errorf(app.EInvalid, "commit %s %q <%s> is not a valid name and email", role, s.Name, s.Email)
	}
	return nil
}

// CommitOptions describe a commit. Committer defaults to Author.
type CommitOptions struct {
	Message   string
	Author    Signature
	Committer Signature
	CoAuthors []Signature // added as Co-authored-by trailers
	// Date is the author and committer date; zero means now. A task that
	// passes a date it keeps across retries (when it was received, say)
	// gets the same commit id when it commits the same tree again on
	// another worker, so that its Push finds the branch done.
	Date time.Time
}

// Commit commits the tree that the last passing Gate checked, on top of
// Head, and returns the new commit id. It refuses to run without a passing
// Gate, so what is committed is always what policy allowed, even if the
// work tree changed since. Committing the same tree again returns Head.
// It runs plumbing only (commit-tree, update-ref): no hook is involved.
func (w *Workspace) Commit(ctx context.Context, opts CommitOptions) (string, error) {
	if opts.Committer == (Signature{}) {
		opts.Committer = opts.Author
	}
	if strings.TrimSpace(opts.Message) == "" {
		return "", app.Errorf(app.EInvalid, "commit message is empty")
	}
	for role, s := range map[string]Signature{"author": opts.Author, "committer": opts.Committer} {
		if err := s.validate(role); err != nil {
			return "", err
		}
	}
	msg := strings.TrimRight(opts.Message, "\n") + "\n"
	for i, s := range opts.CoAuthors {
		if err := s.validate("co-author"); err != nil {
			return "", err
		}
		if i == 0 {
			msg += "\n"
		}
		msg += fmt.Sprintf("Co-authored-by: %s <%s>\n", s.Name, s.Email)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gated == "" {
		return "", errors.New("commit: no passing gate since the last change")
	}
	headTree, err := w.gitString(ctx, gitCall{args: []string{"rev-parse", w.head + "^{tree}"}})
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if headTree == w.gated {
		if w.head == w.base {
			return "", ErrNoChanges
		}
		return w.head, nil
	}
	env := []string{
		"GIT_AUTHOR_NAME=" + opts.Author.Name, "GIT_AUTHOR_EMAIL=" + opts.Author.Email,
		"GIT_COMMITTER_NAME=" + opts.Committer.Name, "GIT_COMMITTER_EMAIL=" + opts.Committer.Email,
	}
	if !opts.Date.IsZero() {
		date := fmt.Sprintf("%d +0000", opts.Date.Unix())
		env = append(env, "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	}
	id, err := w.gitString(ctx, gitCall{stdin: strings.NewReader(msg), env: env,
		args: []string{"commit-tree", w.gated, "-p", w.head, "-F", "-"}})
	if err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	if _, err := w.git(ctx, gitCall{args: []string{"update-ref", "--no-deref", "HEAD", id, w.head}}); err != nil {
		return "", fmt.Errorf("commit: %w", err)
	}
	w.head = id
	return id, nil
}

// Push makes branch on remote point at Head. lease is the commit the branch
// is expected to be at, or "" when the branch must not exist yet; if the
// branch moved, nothing is pushed and the error has code app.EConflict.
// Pushing again once the branch is at Head succeeds without pushing.
func (w *Workspace) Push(ctx context.Context, remote Remote, branch, lease string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.head == w.base {
		return errors.New("push: nothing committed")
	}
	ref := "refs/heads/" + branch
	if _, err := w.git(ctx, gitCall{args: []string{"check-ref-format", ref}}); err != nil || strings.HasPrefix(branch, "-") {
		return app.Errorf(app.EInvalid, "%q is not a valid branch name", branch)
	}
	out, err := w.git(ctx, gitCall{token: remote.Token, args: []string{"ls-remote", "--", remote.URL, ref}})
	if err != nil {
		return fmt.Errorf("push %s: read remote branch: %w", branch, err)
	}
	var current string
	for line := range strings.Lines(string(out)) {
		if id, name, _ := strings.Cut(strings.TrimSpace(line), "\t"); name == ref {
			current = id
		}
	}
	switch current {
	case w.head:
		return nil
	case lease:
	default:
		return app.Errorf(app.EConflict, "branch %s moved (expected %s, found %s); nothing was pushed",
			branch, orNone(lease), orNone(current))
	}
	// The lease is checked again by the remote, atomically with the update.
	_, err = w.git(ctx, gitCall{token: remote.Token, args: []string{"push", "--quiet", "--porcelain",
		"--force-with-lease=" + ref + ":" + lease, "--", remote.URL, w.head + ":" + ref}})
	if err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	return nil
}

func orNone(id string) string {
	if id == "" {
		return "no branch"
	}
	return id
}

// Close removes the work tree and the task's git dir; the mirror stays.
func (w *Workspace) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.root.Close()
	if err := os.RemoveAll(w.dir); err != nil {
		return fmt.Errorf("remove workspace: %w", err)
	}
	unlock(w.lock)
	return nil
}
