package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTreeUsageCountsAllocatedBlocksOnce(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	empty := treeUsage(root, nil)
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i) | 1 // not zeros, which a filesystem may leave unallocated
	}
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a", "b", "one.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	withFile := treeUsage(root, nil)
	if grew := withFile - empty; grew < 1<<20 || grew > 1<<20+64<<10 {
		t.Fatalf("a 1 MiB file grew the tree by %d bytes", grew)
	}
	// A hard link takes no more space; counting it twice would make a
	// command that links files look like it writes them.
	if err := os.Link(filepath.Join(root, "a", "b", "one.bin"), filepath.Join(root, "link.bin")); err != nil {
		t.Fatal(err)
	}
	if got := treeUsage(root, nil); got != withFile {
		t.Errorf("a hard link changed the usage from %d to %d", withFile, got)
	}
	// A sparse file costs what it holds, not its apparent size.
	f, err := os.Create(filepath.Join(root, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got := treeUsage(root, nil); got-withFile > 64<<10 {
		t.Errorf("an empty 1 GiB sparse file counted as %d bytes", got-withFile)
	}
	// A symlink is not followed out of the tree.
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if got := treeUsage(root, nil); got-withFile > 64<<10 {
		t.Errorf("a symlink out of the tree added %d bytes", got-withFile)
	}
	if got := treeUsage(filepath.Join(root, "missing"), nil); got != 0 {
		t.Errorf("usage of a missing tree = %d, want 0", got)
	}
}

func TestTreeLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                      string
		base, start, growth, want int64
	}{
		{"first command", 100, 100, 50, 150},
		{"tree grew under the limit", 100, 120, 50, 150},
		{"tree shrank", 100, 10, 50, 150},
		{"tree already over: no further growth", 100, 400, 50, 400},
	}
	for _, tt := range tests {
		if got := treeLimit(tt.base, tt.start, tt.growth); got != tt.want {
			t.Errorf("%s: treeLimit(%d, %d, %d) = %d, want %d", tt.name, tt.base, tt.start, tt.growth, got, tt.want)
		}
	}
}

func TestServeKillsACommandThatFillsTheTree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const growth = 4 << 20
	// Writes 1 MiB files, ten times the limit, over four seconds: only the
	// watch stops it early. This runs on the host (the executor in-process),
	// so a broken watch costs 40 MiB of a temporary directory, no more; the
	// Docker driver's tests fill a sandbox's tree far past this.
	fill := `i=0; while [ $i -lt 40 ]; do head -c 1048576 /dev/urandom > f$i; i=$((i+1)); sleep 0.1; done`
	answers := serve(t, root, nil,
		req(t, Cmd{Shell: "head -c 1048576 /dev/urandom > small; echo ok", MaxTreeGrowth: growth}),
		req(t, Cmd{Shell: fill, MaxTreeGrowth: growth}),
		req(t, Cmd{Shell: "du -sk . | cut -f1", MaxTreeGrowth: growth}),
		req(t, Cmd{Shell: "rm -f f*; echo cleaned", MaxTreeGrowth: growth}),
		req(t, Cmd{Shell: "head -c 2097152 /dev/urandom > again; echo ok", MaxTreeGrowth: growth}),
	)
	if a := answers[0]; a.ExitCode != 0 || a.TreeFull || string(a.Stdout) != "ok\n" {
		t.Errorf("a command under the limit: %+v", a)
	}
	full := answers[1]
	if !full.TreeFull || full.ExitCode == 0 || full.TimedOut {
		t.Fatalf("a command that fills the tree: exit %d, tree full %v, timed out %v", full.ExitCode, full.TreeFull, full.TimedOut)
	}
	if !strings.Contains(string(full.Stderr), "the work tree grew to") || !strings.Contains(string(full.Stderr), "past its limit of") {
		t.Errorf("stderr does not say why the command was killed: %q", full.Stderr)
	}
	// The tree stopped within a file or two of its limit (one 1 MiB file
	// every 100 ms against a measurement every 50 ms or sooner).
	var kib int64
	if _, err := fmt.Sscan(string(answers[2].Stdout), &kib); err != nil || kib<<10 > growth+2<<20 {
		t.Errorf("the tree after the kill: %q KiB (%v), limit %d KiB", answers[2].Stdout, err, growth>>10)
	}
	if a := answers[3]; a.ExitCode != 0 || a.TreeFull || string(a.Stdout) != "cleaned\n" {
		t.Errorf("the command after a full tree did not run normally: %+v", a)
	}
	if a := answers[4]; a.ExitCode != 0 || a.TreeFull {
		t.Errorf("a command under the limit once the tree was cleaned: %+v", a)
	}
}

func TestNextTreePoll(t *testing.T) {
	t.Parallel()
	const ms = time.Millisecond
	tests := []struct {
		name                string
		prev, size, limit   int64
		elapsed, walk, want time.Duration
	}{
		{"still tree", 100, 100, 1000, 50 * ms, ms, treePoll},
		{"shrinking tree", 200, 100, 1000, 50 * ms, ms, treePoll},
		{"slow growth, far from the limit", 100, 110, 1000, 50 * ms, ms, treePoll},
		{"fast growth: half the time to the limit", 100, 500, 1000, 40 * ms, ms, 25 * ms},
		{"at the limit: the floor", 100, 1000, 1000, 40 * ms, 0, treePollMin},
		{"a slow walk waits for its share", 100, 100, 1000, 50 * ms, 20 * ms, 200 * ms},
		{"a slow walk of a growing tree too", 100, 500, 1000, 40 * ms, 20 * ms, 200 * ms},
	}
	for _, tt := range tests {
		if got := nextTreePoll(tt.prev, tt.size, tt.limit, tt.elapsed, tt.walk); got != tt.want {
			t.Errorf("%s: nextTreePoll = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// The space commands are measured in is the tree without the overlays
// mounted in it, plus the directories their writes land in (and a setup's
// $HOME): an overlay's merged view, which holds the environment's own
// files, is not what a command cost.
func TestSpaceCountsWhereWritesLand(t *testing.T) {
	t.Parallel()
	root, upper := t.TempDir(), t.TempDir()
	write := func(path string, n int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bytes.Repeat([]byte{1}, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "own.go"), 1<<20)
	write(filepath.Join(root, "node_modules", "dep.js"), 8<<20) // the environment's, through the overlay
	tree := treeUsage(root, nil)
	s := newSpace(ExecOptions{Root: root, Skip: []string{"node_modules"}, Count: []string{upper}})
	without := s.usage()
	if without > tree-8<<20 || without < 1<<20 {
		t.Fatalf("the space without the overlay: %d bytes; the tree with it: %d", without, tree)
	}
	write(filepath.Join(upper, "fill.bin"), 4<<20)
	if got := s.usage(); got-without < 4<<20 {
		t.Errorf("4 MiB written to the upper directory grew the space by %d bytes", got-without)
	}
}
