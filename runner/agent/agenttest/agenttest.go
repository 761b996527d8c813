// Package agenttest provides what tests of the agent loop need around it: a
// real git work tree at a base commit that satisfies agent.Workspace, and an
// in-memory agent.StateStore.
package agenttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
)

// Tree is a git work tree whose HEAD is the base commit.
type Tree struct {
	Dir  string
	root *os.Root
}

// NewTree writes files (path -> content) into a temporary directory and
// commits them as the base.
func NewTree(t testing.TB, files map[string]string) *Tree {
	t.Helper()
	dir := t.TempDir()
	ostest.WriteTree(t, dir, files)
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "base")
	return open(t, dir)
}

// Clone returns a fresh tree at the same base commit, as another worker
// would check it out.
func (tr *Tree) Clone(t testing.TB) *Tree {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "clone", "-q", tr.Dir, ".")
	return open(t, dir)
}

// OpenTree takes an existing work tree, for a child process of a test.
func OpenTree(t testing.TB, dir string) *Tree { return open(t, dir) }

func open(t testing.TB, dir string) *Tree {
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return &Tree{Dir: dir, root: root}
}

// Root returns the work tree as an os.Root.
func (tr *Tree) Root() *os.Root { return tr.root }

// Diff returns the tree's diff against the base, new files included.
func (tr *Tree) Diff(ctx context.Context) (string, error) {
	if _, err := run(ctx, tr.Dir, nil, "add", "-A", "-N"); err != nil {
		return "", err
	}
	return run(ctx, tr.Dir, nil, "diff", "--binary", "HEAD")
}

// Apply applies a diff to the tree.
func (tr *Tree) Apply(ctx context.Context, diff string) error {
	_, err := run(ctx, tr.Dir, []byte(diff), "apply", "--binary", "-")
	return err
}

// Read returns a file of the tree, or "" when it does not exist.
func (tr *Tree) Read(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tr.Dir, p))
	if err != nil {
		return ""
	}
	return string(b)
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	if _, err := run(context.Background(), dir, nil, args...); err != nil {
		t.Fatal(err)
	}
}

func run(ctx context.Context, dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// Store is an in-memory agent.StateStore that counts saves.
type Store struct {
	mu    sync.Mutex
	state map[string][]byte
	saves int
}

// NewStore returns an empty store.
func NewStore() *Store { return &Store{state: map[string][]byte{}} }

// SaveState keeps a copy of state.
func (s *Store) SaveState(_ context.Context, id string, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[id] = bytes.Clone(state)
	s.saves++
	return nil
}

// LoadState returns the saved state, nil when there is none.
func (s *Store) LoadState(_ context.Context, id string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.state[id]), nil
}

// Saves returns how many times state was saved.
func (s *Store) Saves() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves
}
