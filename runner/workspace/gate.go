package workspace

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// Git's file modes as go-gitdiff reports them.
const (
	modeFile    os.FileMode = 0o100644
	modeExec    os.FileMode = 0o100755
	modeSymlink os.FileMode = 0o120000
	modeGitlink os.FileMode = 0o160000
)

// maxViolations bounds how many violations a refusal lists, so that it stays
// readable as a comment.
const maxViolations = 20

// GateReport is what the gate checked.
type GateReport struct {
	Tree         string   // the tree object checked: what Commit commits
	Diff         string   // the diff against the base commit, as Diff returns it
	Files        []string // every path touched, both sides of a rename
	FilesChanged int
	LinesAdded   int
	LinesDeleted int
	// Tampering lists the changed tests, check inputs and CI files, for
	// reviewers; it is computed whether or not the gate passes.
	Tampering app.Tampering
}

// Gate recomputes the change on the host and checks it against policy.
// Before git reads the tree, the tree scan (see snapshot) refuses FIFOs,
// sockets and devices, names git refuses, oversize files and too many new
// files. Then, over the diff: every touched path (both sides of a rename)
// against Paths, deny globs regardless of case; no protected path
// (.github/, CODEOWNERS, the policy file) unless paths.allow names it
// explicitly (see policy.Paths.Check); no symlink at or above a denied path
// and no change reached through one; the number of files and of lines
// changed against Limits (a zero limit is no limit); no submodule (gitlink
// or .gitmodules) and no nested repository; no symlink that is absolute or
// leads outside the tree; no file over the Manager's size cap. Executable
// regular files are allowed; git records no other mode bits.
//
// The report also lists, in Tampering, every changed test, check input and
// CI file, with the tests removed and the skips added, for the pull
// request and the check run to show.
//
// A violation is an *app.Error with code app.EPolicy naming each path and
// rule; the report is returned either way. Only a passing Gate lets Commit
// run, and Commit then commits the tree the gate checked.
func (w *Workspace) Gate(ctx context.Context, policy policy.Policy) (GateReport, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gated = ""
	tree, err := w.snapshot(ctx)
	if err != nil {
		return GateReport{}, err
	}
	rep := GateReport{Tree: tree}
	if rep.Diff, err = w.diff(ctx, tree); err != nil {
		return rep, err
	}
	files, _, err := gitdiff.Parse(strings.NewReader(rep.Diff))
	if err != nil {
		return rep, fmt.Errorf("gate: parse diff: %w", err)
	}
	rep.Tampering = tampering(files, policy.Checks)
	entries, links, err := w.treeEntries(ctx, tree)
	if err != nil {
		return rep, fmt.Errorf("gate: %w", err)
	}
	var oids []string
	for _, f := range files {
		if e, ok := entries[f.NewName]; ok && !f.IsDelete {
			oids = append(oids, e.oid)
		}
	}
	sizes, err := w.blobSizes(ctx, oids)
	if err != nil {
		return rep, fmt.Errorf("gate: %w", err)
	}

	var violations []string
	rep.FilesChanged = len(files)
	for _, f := range files {
		for _, fr := range f.TextFragments {
			rep.LinesAdded += int(fr.LinesAdded)
			rep.LinesDeleted += int(fr.LinesDeleted)
		}
		names := []string{f.OldName}
		if f.NewName != f.OldName {
			names = append(names, f.NewName)
		}
		for _, name := range names {
			if name == "" {
				continue
			}
			rep.Files = append(rep.Files, name)
			violations = append(violations, checkPath(policy.Paths, name)...)
		}
		violations = append(violations, w.checkContent(f, entries, links, sizes)...)
	}
	violations = append(violations, guardedLinks(policy.Paths, files, links)...)
	if l := policy.Limits.FilesChanged; l > 0 && rep.FilesChanged > l {
		violations = append(violations, fmt.Sprintf("%d files changed, over the limit of %d", rep.FilesChanged, l))
	}
	if l := policy.Limits.DiffLines; l > 0 && rep.LinesAdded+rep.LinesDeleted > l {
		violations = append(violations, fmt.Sprintf("%d lines changed, over the limit of %d", rep.LinesAdded+rep.LinesDeleted, l))
	}
	if n := len(violations); n > 0 {
		if n > maxViolations {
			violations = append(violations[:maxViolations], fmt.Sprintf("and %d more", n-maxViolations))
		}
		return rep, app.Errorf(app.EPolicy, "the change breaks the repository's policy: %s", strings.Join(violations, "; "))
	}
	w.gated = tree
	return rep, nil
}

// checkPath applies the rules that depend on a path alone.
func checkPath(p policy.Paths, name string) []string {
	var v []string
	if err := p.Check(name); err != nil {
		v = append(v, app.ErrorMessage(err))
	}
	if name == ".gitmodules" {
		v = append(v, ".gitmodules may not change: submodules are not allowed")
	}
	return v
}

// guardedLinks refuses what a symlink at or above a denied or protected
// path makes of it ("**/*.pem" guards no directory; ".github/**" guards
// .github): such a symlink, when the change makes it, and any change under
// the directory a symlink there leads to, since that content stands where
// the rule looks. links maps every symlink of the new tree to its target.
func guardedLinks(p policy.Paths, files []*gitdiff.File, links map[string]string) []string {
	changed := map[string]bool{}
	for _, f := range files {
		if !f.IsDelete {
			changed[f.NewName] = true
		}
	}
	var v []string
	for _, l := range slices.Sorted(maps.Keys(links)) {
		g, ok := p.GuardsBelow(l)
		if !ok {
			continue
		}
		if changed[l] {
			if p.Check(l) == nil { // else checkPath has refused it already
				v = append(v, fmt.Sprintf("%s is a symlink above the denied path %q, which would let other files stand in for it", l, g))
			}
			continue
		}
		hops := 0
		to, ok := resolveLink(parent(l), links[l], links, &hops)
		if !ok {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(changed)) {
			if to == "" || strings.HasPrefix(name, to+"/") {
				v = append(v, fmt.Sprintf("%s is reached through the symlink %s, which stands at the denied path %q", name, l, g))
			}
		}
	}
	return v
}

// checkContent applies the rules on what a file becomes: its mode, where a
// symlink leads, its size. The new side's mode and blob come from the tree
// itself, since a diff omits the mode of a file whose mode did not change.
func (w *Workspace) checkContent(f *gitdiff.File, entries map[string]treeEntry, links map[string]string, sizes map[string]int64) []string {
	if f.IsDelete {
		if f.OldMode == modeGitlink {
			return []string{fmt.Sprintf("%s is a submodule, and submodules may not change", f.OldName)}
		}
		return nil
	}
	name := f.NewName
	e := entries[name]
	switch {
	case e.mode == modeGitlink || f.OldMode == modeGitlink:
		return []string{fmt.Sprintf("%s is a submodule, and submodules may not change", name)}
	case e.mode == modeSymlink:
		hops := 0
		if _, ok := resolveLink(parent(name), links[name], links, &hops); !ok {
			return []string{fmt.Sprintf("%s is a symlink to %q, which leads outside the repository", name, links[name])}
		}
	case e.mode == modeFile || e.mode == modeExec:
		if size := sizes[e.oid]; size > w.m.maxFileSize {
			return []string{fmt.Sprintf("%s is %d bytes, over the limit of %d bytes per file", name, size, w.m.maxFileSize)}
		}
	default:
		return []string{fmt.Sprintf("%s has file mode %o, which is not allowed", name, e.mode)}
	}
	return nil
}

// treeEntry is a blob (or gitlink) of a tree.
type treeEntry struct {
	mode os.FileMode
	oid  string
}

// treeEntries lists every entry of tree, and maps each symlink to its
// target.
func (w *Workspace) treeEntries(ctx context.Context, tree string) (map[string]treeEntry, map[string]string, error) {
	out, err := w.git(ctx, gitCall{args: []string{"ls-tree", "-r", "-z", "--full-tree", tree}})
	if err != nil {
		return nil, nil, fmt.Errorf("list tree: %w", err)
	}
	entries := make(map[string]treeEntry)
	var paths, oids []string
	for _, entry := range bytes.Split(out, []byte{0}) {
		meta, name, ok := strings.Cut(string(entry), "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 3 {
			continue
		}
		mode, err := strconv.ParseUint(fields[0], 8, 32)
		if err != nil {
			return nil, nil, fmt.Errorf("list tree: bad mode in %q", meta)
		}
		entries[name] = treeEntry{mode: os.FileMode(mode), oid: fields[2]}
		if os.FileMode(mode) == modeSymlink {
			paths = append(paths, name)
			oids = append(oids, fields[2])
		}
	}
	links, err := w.readBlobs(ctx, paths, oids)
	return entries, links, err
}

// readBlobs maps paths[i] to the content of oids[i].
func (w *Workspace) readBlobs(ctx context.Context, paths, oids []string) (map[string]string, error) {
	blobs := make(map[string]string, len(paths))
	if len(oids) == 0 {
		return blobs, nil
	}
	out, err := w.git(ctx, gitCall{stdin: strings.NewReader(strings.Join(oids, "\n") + "\n"),
		args: []string{"cat-file", "--batch"}})
	if err != nil {
		return nil, fmt.Errorf("read blobs: %w", err)
	}
	r := bufio.NewReader(bytes.NewReader(out))
	for _, p := range paths {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		fields := strings.Fields(header)
		size, err := strconv.Atoi(fields[len(fields)-1])
		if err != nil {
			return nil, fmt.Errorf("read %s: bad header %q", p, header)
		}
		content := make([]byte, size+1) // the content and the newline after it
		if _, err := io.ReadFull(r, content); err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		blobs[p] = string(content[:size])
	}
	return blobs, nil
}

// blobSizes returns the size of each object in oids.
func (w *Workspace) blobSizes(ctx context.Context, oids []string) (map[string]int64, error) {
	sizes := make(map[string]int64, len(oids))
	if len(oids) == 0 {
		return sizes, nil
	}
	out, err := w.git(ctx, gitCall{stdin: strings.NewReader(strings.Join(oids, "\n") + "\n"),
		args: []string{"cat-file", "--batch-check=%(objectname) %(objectsize)"}})
	if err != nil {
		return nil, fmt.Errorf("read sizes: %w", err)
	}
	for line := range strings.Lines(string(out)) {
		oid, size, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read sizes: bad line %q", line)
		}
		sizes[oid] = n
	}
	return sizes, nil
}

// resolveLink returns where target, the content of a symlink in directory
// dir, leads inside the tree, following the tree's other symlinks (links
// maps a path to its target) the way the kernel would. ok is false when any
// step leaves the tree, the target is absolute, or more than 40 links are
// followed in all (the kernel's limit, which also ends loops).
func resolveLink(dir, target string, links map[string]string, hops *int) (_ string, ok bool) {
	if target == "" || path.IsAbs(target) || *hops > 40 {
		return "", false
	}
	cur := dir
	for _, part := range strings.Split(target, "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			if cur == "" {
				return "", false
			}
			cur = parent(cur)
			continue
		}
		next := path.Join(cur, part)
		if t, isLink := links[next]; isLink {
			*hops++
			if next, ok = resolveLink(cur, t, links, hops); !ok {
				return "", false
			}
		}
		cur = next
	}
	return cur, true
}

// parent is path.Dir with the tree's top as "".
func parent(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}
