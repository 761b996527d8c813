package workspace

import (
	"context"
	"fmt"

	"github.com/agentbot/agentbot/app"
)

// History is a repository's mirror, brought up to date, read for what
// became of work after it was pushed: what a merge kept of it. It reads
// commits and never writes a tree, so it needs no workspace.
type History struct {
	m    *Manager
	repo string
	dir  string
}

// History fetches the repository's mirror (cloning it the first time) and
// returns it for reading. The fetch takes every ref, so commits on deleted
// branches stay reachable through GitHub's refs/pull/N/head.
func (m *Manager) History(ctx context.Context, repo string, remote Remote) (*History, error) {
	opts := CheckoutOptions{Repo: repo, Remote: remote}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir, _, err := m.syncMirror(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &History{m: m, repo: repo, dir: dir}, nil
}

// commit checks that id is a full commit id the mirror has. Only full ids
// are taken, so nothing from an event can pass for an option or a range.
func (h *History) commit(ctx context.Context, id string) error {
	if !isCommitID(id) {
		return app.Errorf(app.EInvalid, "%q is not a commit id", id)
	}
	if _, err := h.m.resolve(ctx, h.dir, id); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("resolve %s in %s: %w", id, h.repo, ctx.Err())
		}
		return app.Errorf(app.ENotFound, "%s has no commit %s", h.repo, id)
	}
	return nil
}

// MergeBase returns the best common ancestor of the commits a and b, or an
// *app.Error with code app.ENotFound when the mirror lacks one of them or
// they share no history.
func (h *History) MergeBase(ctx context.Context, a, b string) (string, error) {
	for _, id := range []string{a, b} {
		if err := h.commit(ctx, id); err != nil {
			return "", err
		}
	}
	base, err := h.m.git.runString(ctx, gitCall{gitDir: h.dir, args: []string{"merge-base", "--end-of-options", a, b}})
	if err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("merge base of %s and %s in %s: %w", a, b, h.repo, err)
		}
		return "", app.Errorf(app.ENotFound, "%s: %s and %s share no history", h.repo, a, b)
	}
	return base, nil
}

// Diff returns the unified diff from the commit from to the commit to, as
// the bytes are stored: no rename detection (both sides of a comparison
// then name files alike), no external diff or textconv driver. It is
// capped like a workspace's diff (Options.MaxDiffSize).
func (h *History) Diff(ctx context.Context, from, to string) (string, error) {
	for _, id := range []string{from, to} {
		if err := h.commit(ctx, id); err != nil {
			return "", err
		}
	}
	out, err := h.m.git.run(ctx, gitCall{gitDir: h.dir, maxStdout: h.m.maxDiffSize,
		args: []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", "--end-of-options", from, to}})
	if err != nil {
		return "", fmt.Errorf("diff %s..%s in %s: %w", from, to, h.repo, err)
	}
	return string(out), nil
}
