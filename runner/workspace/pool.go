package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A spare is a work tree prepared ahead of the task that takes it: a
// directory holding git/ and tree/ exactly as newWorkspace makes them,
// checked out at the mirror's HEAD. It lives under spares/owner/name/ and
// belongs to the process that made it, which holds its lock; it is handed
// out under Manager.mu, so to one task only, and no sandbox has seen it
// before a task takes it.
type spare struct {
	dir  string
	lock *os.File
}

func (s *spare) remove() error {
	err := os.RemoveAll(s.dir)
	unlock(s.lock)
	if err != nil {
		return fmt.Errorf("remove spare work tree: %w", err)
	}
	return nil
}

// pool is a repository's spare trees.
type pool struct {
	key      string
	spares   []*spare
	filling  bool // a goroutine is preparing spares
	lastUsed time.Time
	idle     *time.Timer // evicts the pool once unused for the TTL
}

// takeSpare hands out one of the repository's spare trees, or nil.
func (m *Manager) takeSpare(key string) *spare {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pools[key]
	if p == nil || len(p.spares) == 0 {
		return nil
	}
	s := p.spares[len(p.spares)-1]
	p.spares = p.spares[:len(p.spares)-1]
	return s
}

// fromSpare turns a spare tree into the workspace of a task at base.
func (m *Manager) fromSpare(ctx context.Context, s *spare, base string) (_ *Workspace, err error) {
	lock, dir, err := lockedName(filepath.Join(m.dataDir, "work"), "task")
	if err != nil {
		s.remove()
		return nil, err
	}
	if err := os.Rename(s.dir, dir); err != nil {
		unlock(lock)
		s.remove()
		return nil, fmt.Errorf("take spare work tree: %w", err)
	}
	unlock(s.lock) // the task's lock covers the directory now
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
			unlock(lock)
		}
	}()
	gitDir, tree := filepath.Join(dir, "git"), filepath.Join(dir, "tree")
	// Nothing has run in the tree since it was checked out, and read-tree
	// would restore a changed file anyway; but a task must get exactly its
	// commit, so anything the index and HEAD do not account for, ignored
	// files included, discards the spare.
	out, err := m.git.run(ctx, gitCall{gitDir: gitDir, workTree: tree, maxStdout: 4096,
		args: []string{"status", "--porcelain", "-z", "--untracked-files=all", "--ignored", "--no-renames"}})
	switch {
	case errors.Is(err, errOutputTooLarge):
		return nil, errors.New("spare work tree is not clean")
	case err != nil:
		return nil, err
	case len(out) > 0:
		return nil, fmt.Errorf("spare work tree is not clean: %q", head(string(out), 200))
	}
	if err := m.moveTo(ctx, gitDir, tree, base); err != nil {
		return nil, err
	}
	return m.openWorkspace(lock, dir, base)
}

// prepareSpares records a use of the repository and, unless its pool is
// full or being filled, starts filling it in the background.
func (m *Manager) prepareSpares(key, mirror string) {
	if m.spareTrees <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	p := m.pools[key]
	if p == nil {
		p = &pool{key: key}
		p.idle = time.AfterFunc(m.spareTTL, func() { m.evictIfIdle(p) })
		m.pools[key] = p
	} else {
		p.idle.Reset(m.spareTTL)
	}
	p.lastUsed = time.Now()
	if p.filling || len(p.spares) >= m.spareTrees {
		return
	}
	p.filling = true
	m.bg.Add(1)
	go m.fill(p, mirror)
}

// fill prepares spare trees until the pool is full, evicted or closed.
func (m *Manager) fill(p *pool, mirror string) {
	defer m.bg.Done()
	for {
		m.mu.Lock()
		if m.closed || m.pools[p.key] != p || len(p.spares) >= m.spareTrees {
			p.filling = false
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()

		s, err := m.makeSpare(p.key, mirror)
		if err != nil {
			if m.bgCtx.Err() == nil {
				m.log.Warn("prepare spare work tree", "repo", p.key, "err", err)
			}
			m.mu.Lock()
			p.filling = false
			m.mu.Unlock()
			return
		}

		m.mu.Lock()
		if m.closed || m.pools[p.key] != p {
			m.mu.Unlock()
			s.remove()
			return
		}
		p.spares = append(p.spares, s)
		m.mu.Unlock()
	}
}

// makeSpare checks the mirror's HEAD out into a new spare tree.
func (m *Manager) makeSpare(key, mirror string) (_ *spare, err error) {
	ctx := m.bgCtx
	head, err := m.resolve(ctx, mirror, "")
	if err != nil {
		return nil, fmt.Errorf("resolve HEAD: %w", err)
	}
	lock, dir, err := lockedName(filepath.Join(m.dataDir, "spares", filepath.FromSlash(key)), "spare")
	if err != nil {
		return nil, err
	}
	s := &spare{dir: dir, lock: lock}
	defer func() {
		if err != nil {
			s.remove()
		}
	}()
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	if err := m.checkoutInto(ctx, dir, mirror, head); err != nil {
		return nil, err
	}
	m.log.Debug("spare work tree ready", "repo", key, "head", head)
	return s, nil
}

// evictIfIdle removes the pool and its spare trees once its repository
// has gone unused for the TTL.
func (m *Manager) evictIfIdle(p *pool) {
	m.mu.Lock()
	if m.closed || m.pools[p.key] != p {
		m.mu.Unlock()
		return
	}
	if idle := time.Since(p.lastUsed); idle < m.spareTTL {
		p.idle.Reset(m.spareTTL - idle)
		m.mu.Unlock()
		return
	}
	delete(m.pools, p.key)
	spares := p.spares
	p.spares = nil
	m.bg.Add(1)
	m.mu.Unlock()
	defer m.bg.Done()
	if err := removeSpares(spares); err != nil {
		m.log.Warn("evict spare work trees", "repo", p.key, "err", err)
	}
	m.log.Debug("spare work trees evicted", "repo", p.key, "count", len(spares))
}

func removeSpares(spares []*spare) error {
	var errs []error
	for _, s := range spares {
		errs = append(errs, s.remove())
	}
	return errors.Join(errs...)
}

// Close stops preparing spare trees and removes those ready. Workspaces
// already handed out are their tasks' to close. Checkout still works
// after Close, without spares.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	var spares []*spare
	for key, p := range m.pools {
		p.idle.Stop()
		spares = append(spares, p.spares...)
		delete(m.pools, key)
	}
	m.mu.Unlock()
	m.stopBg()
	m.bg.Wait()
	return removeSpares(spares)
}
