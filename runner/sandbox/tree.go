package sandbox

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// DefaultMaxTreeGrowth is how far a Cmd that leaves MaxTreeGrowth zero may
// grow the work tree.
const DefaultMaxTreeGrowth = 1 << 30

// treePoll is how often a command's work tree is measured at most.
// Between two measurements a command can write past its limit by what the
// disk takes in that time, so a tree that grows towards its limit is
// measured sooner: after half the time it would take to reach the limit at
// the rate it grew, but not sooner than treePollMin. A tree that takes
// long to walk is measured less often (treeWalkShare), so that the watch
// never takes more than a tenth of a core from the command.
const (
	treePoll      = 50 * time.Millisecond
	treePollMin   = 2 * time.Millisecond
	treeWalkShare = 10 // wait at least this many times the last walk's duration
)

// nextTreePoll is how long to wait before the next measurement of a tree
// that grew from prev to size in elapsed, towards limit, in a walk that
// took walk.
func nextTreePoll(prev, size, limit int64, elapsed, walk time.Duration) time.Duration {
	wait := treePoll
	if grew := size - prev; grew > 0 && elapsed > 0 {
		// At the rate it grew, the tree reaches its limit in reach.
		reach := time.Duration(float64(limit-size) / float64(grew) * float64(elapsed))
		wait = min(wait, max(reach/2, treePollMin))
	}
	return max(wait, treeWalkShare*walk)
}

// errTreeFull is the cause a command is cancelled with when its work tree
// grew past the limit.
var errTreeFull = errors.New("work tree full")

// space is what commands' writes are measured in: the work tree at root,
// without the overlays mounted in it (skip, slash-separated paths relative
// to root), whose merged view is not what they cost, and the directories
// of count: the overlays' upper directories, where what a command writes
// through them lands, and a setup's $HOME. Together they are everything
// a command can put on the worker's disk.
type space struct {
	root  string
	skip  map[string]bool
	count []string
}

func newSpace(opts ExecOptions) space {
	s := space{root: opts.Root, count: opts.Count, skip: map[string]bool{}}
	for _, p := range opts.Skip {
		s.skip[p] = true
	}
	return s
}

// usage is the disk space of the whole space.
func (s space) usage() int64 {
	total := treeUsage(s.root, s.skip)
	for _, dir := range s.count {
		total += treeUsage(dir, nil)
	}
	return total
}

// treeUsage is the disk space the files under root take, but for the
// directories of skip: allocated blocks, not apparent sizes (a sparse file
// costs what it holds), directories included, a file with several hard
// links counted once. Entries that vanish or cannot be read during the
// walk are skipped: the tree changes under a running command. The walk
// goes through an os.Root, so a directory swapped for a symlink while it
// runs does not lead it out of the tree.
func treeUsage(root string, skip map[string]bool) int64 {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0
	}
	defer r.Close()
	type inode struct{ dev, ino uint64 }
	var total int64
	seen := map[inode]bool{}
	fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a directory that vanished or is unreadable: skip it
		}
		if skip[p] && d.IsDir() {
			return fs.SkipDir
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			total += fi.Size()
			return nil
		}
		if st.Nlink > 1 && !fi.IsDir() {
			k := inode{uint64(st.Dev), uint64(st.Ino)}
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		total += int64(st.Blocks) * 512
		return nil
	})
	return total
}

// treeLimit is the size a command's work tree may reach: base (the tree
// when the executor started) plus growth, or the size the command started
// with if that is more, so that a command after one that filled the tree
// still runs (to delete files, say) but may not grow it further.
func treeLimit(base, start, growth int64) int64 {
	return max(base+growth, start)
}

// watchTree measures space until ctx is done. Its first
// measurement, taken as the command starts rather than before, so that a
// large tree does not delay every command, is passed to limitOf for the
// limit; full is called, once, with the size it saw and the limit, the
// first time a measurement is over the limit. The returned function stops
// the watch and waits until it has stopped.
func watchTree(ctx context.Context, space space, limitOf func(start int64) int64, full func(size, limit int64)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t0 := time.Now()
		prev := space.usage()
		at := time.Now()
		limit := limitOf(prev)
		wait := max(treePoll, treeWalkShare*at.Sub(t0))
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			start := time.Now()
			size := space.usage()
			if size > limit {
				full(size, limit)
				return
			}
			now := time.Now()
			wait = nextTreePoll(prev, size, limit, now.Sub(at), now.Sub(start))
			prev, at = size, now
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
