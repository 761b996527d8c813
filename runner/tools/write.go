package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"github.com/bmatcuk/doublestar/v4"
)

// change is the would-be content of one file; nil content deletes it.
type change struct {
	path    string
	content *string
}

// write checks a set of changes against the policy and the diff budget and,
// only if all of them pass, applies them to the tree. A refusal writes
// nothing and tells the model why.
func (s *Set) write(ctx context.Context, changes []change, target string) Result {
	changes = slices.Clone(changes)
	for i, c := range changes {
		// A write lands where the symlinks on its way lead: both the name
		// and that path must be writable, and the budget counts the file
		// actually changed. A delete removes the last name itself.
		real, err := s.landsAt(c)
		if err != nil {
			return failed(target, "%v", err)
		}
		for _, p := range []string{c.path, real} {
			if err := s.writable(p); err != nil {
				msg := app.ErrorMessage(err)
				if p != c.path {
					msg = fmt.Sprintf("%s leads through a symlink to %s, and %s", c.path, real, msg)
				}
				return Result{Outcome: BlockedWrite, Target: target,
					Output: fmt.Sprintf("refused, nothing was written: %s. Change only files the policy allows.", msg)}
			}
		}
		changes[i].path = real
	}
	next, err := s.budget.wouldBe(ctx, changes)
	if err != nil {
		return failed(target, "%v", err)
	}
	if msg := s.budget.exceeds(next); msg != "" {
		return Result{Outcome: BlockedWrite, Target: target, Output: "refused, nothing was written: " + msg}
	}
	for _, c := range changes {
		if err := s.apply(c); err != nil {
			return failed(target, "write %s: %v", c.path, err)
		}
	}
	s.budget.commit(next)
	lines, files := s.budget.total(s.budget.stats)
	return Result{Outcome: OK, Target: target, Changed: true,
		Output: fmt.Sprintf("ok: %s written; the task's diff is now %d changed lines in %d files", target, lines, files)}
}

// landsAt returns the tree-relative path a change affects once symlinks are
// followed: every one for a write, those of the directories for a delete.
func (s *Set) landsAt(c change) (string, error) {
	if c.content != nil {
		return resolve(s.root, c.path)
	}
	dir, err := resolve(s.root, path.Dir(c.path))
	if err != nil {
		return "", err
	}
	return path.Join(dir, path.Base(c.path)), nil
}

// writable says whether the policy lets the tools write path.
func (s *Set) writable(p string) error {
	if err := s.policy.Paths.Check(p); err != nil {
		return err
	}
	rule := s.policy.Tools.Write
	if rule.Policy == policy.ApprovalAllowlist && !matchAny(rule.Allow, p) {
		return app.Errorf(app.EPolicy, "%s is not in the write allowlist %q", p, rule.Allow)
	}
	return nil
}

func matchAny(globs []string, s string) bool {
	for _, g := range globs {
		if g == s || doublestar.MatchUnvalidated(g, s) {
			return true
		}
	}
	return false
}

func (s *Set) apply(c change) error {
	s.files.drop(c.path)
	if c.content == nil {
		err := s.root.Remove(c.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	mode := fs.FileMode(0o644)
	fi, err := s.root.Stat(c.path)
	existed := err == nil
	if existed {
		mode = fi.Mode().Perm()
	}
	if err := s.mkdirs(path.Dir(c.path)); err != nil {
		return err
	}
	if err := writeRegular(s.root, c.path, []byte(*c.content), mode); err != nil {
		return err
	}
	if !existed {
		s.ownLikeParent(c.path)
	}
	return nil
}

// mkdirs creates the missing directories of dir, each owned like its parent.
func (s *Set) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	if fi, err := s.root.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := s.mkdirs(path.Dir(dir)); err != nil {
		return err
	}
	if err := s.root.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	s.ownLikeParent(dir)
	return nil
}

// ownLikeParent gives a file or directory the host just created the owner
// of its directory: the tree belongs to the sandbox user, who must be able
// to change what the host wrote (gofmt -w, a test's golden files). Where the
// host may not chown, the file keeps the host's owner.
func (s *Set) ownLikeParent(p string) {
	fi, err := s.root.Stat(path.Dir(p))
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		_ = s.root.Lchown(p, int(st.Uid), int(st.Gid)) // best effort, as documented
	}
}

type editFileArgs struct {
	Path      string  `json:"path"`
	OldString *string `json:"old_string"`
	NewString *string `json:"new_string"`
}

func (a editFileArgs) validate() error {
	switch {
	case a.Path == "":
		return errors.New("path is required")
	case a.OldString == nil || *a.OldString == "":
		return errors.New("old_string is required and may not be empty; use write_file for a new file")
	case a.NewString == nil:
		return errors.New("new_string is required (it may be empty)")
	case *a.OldString == *a.NewString:
		return errors.New("old_string and new_string are the same")
	}
	return nil
}

func editFile(ctx context.Context, s *Set, a editFileArgs) Result {
	p, b, fail, ok := s.readNamed(ctx, a.Path)
	if !ok {
		return fail
	}
	text, old := string(b), *a.OldString
	switch n := strings.Count(text, old); n {
	case 0:
		return failed(p, "old_string was not found in %s; read the file again and copy the text exactly, whitespace included", p)
	case 1:
	default:
		return failed(p, "old_string occurs %d times in %s, at lines %s; include more surrounding lines so that it matches once", n, p, occurrenceLines(text, old))
	}
	updated := strings.Replace(text, old, *a.NewString, 1)
	return s.write(ctx, []change{{path: p, content: &updated}}, p)
}

func occurrenceLines(text, sub string) string {
	var lines []string
	off := 0
	for {
		i := strings.Index(text[off:], sub)
		if i < 0 {
			return strings.Join(lines, ", ")
		}
		off += i
		lines = append(lines, fmt.Sprint(strings.Count(text[:off], "\n")+1))
		off += len(sub)
	}
}

type writeFileArgs struct {
	Path    string  `json:"path"`
	Content *string `json:"content"`
}

func (a writeFileArgs) validate() error {
	if a.Path == "" || a.Content == nil {
		return errors.New("path and content are required")
	}
	return nil
}

func writeFile(ctx context.Context, s *Set, a writeFileArgs) Result {
	p, err := cleanPath(a.Path)
	if err != nil {
		return failed(a.Path, "%v", err)
	}
	if p == "." {
		return failed(a.Path, "path names the repository root")
	}
	if _, err := s.root.Lstat(p); err == nil {
		return failed(p, "%s exists; change it with edit_file or apply_patch", p)
	}
	return s.write(ctx, []change{{path: p, content: a.Content}}, p)
}

type applyPatchArgs struct {
	Patch string `json:"patch"`
}

func (a applyPatchArgs) validate() error {
	if strings.TrimSpace(a.Patch) == "" {
		return errors.New("patch is required")
	}
	return nil
}

// applyPatch applies a multi-file unified diff in memory first, so that a
// hunk that does not apply, a denied path or an exceeded budget leaves the
// tree as it was.
func applyPatch(ctx context.Context, s *Set, a applyPatchArgs) Result {
	files, _, err := gitdiff.Parse(strings.NewReader(a.Patch))
	if err != nil {
		return invalid("the patch does not parse: %v", err)
	}
	if len(files) == 0 {
		return invalid("the patch changes no file; it needs ---/+++ headers and @@ hunks")
	}
	// gitdiff strips the a/ and b/ prefixes of git headers only; a plain
	// unified diff keeps them in the names.
	plain := !strings.Contains(a.Patch, "diff --git ")
	work := map[string]*string{} // path -> content after the patch so far
	var order []string
	get := func(p string) (*string, error) {
		if c, ok := work[p]; ok {
			return c, nil
		}
		return readOptional(ctx, s.root, p)
	}
	set := func(p string, c *string) {
		if _, ok := work[p]; !ok {
			order = append(order, p)
		}
		work[p] = c
	}
	for _, f := range files {
		if f.IsBinary {
			return failed(f.NewName, "binary patches are not supported (%s)", f.NewName)
		}
		oldName, newName := f.OldName, f.NewName
		if plain {
			oldName, newName = stripPrefix(oldName), stripPrefix(newName)
		}
		if f.IsNew {
			oldName = ""
		}
		if f.IsDelete {
			newName = ""
		}
		var src string
		if oldName != "" {
			p, err := cleanPath(oldName)
			if err != nil {
				return failed(oldName, "%v", err)
			}
			c, err := get(p)
			if err != nil {
				return failed(p, "%v", err)
			}
			if c == nil {
				return failed(p, "the patch changes %s, which does not exist", p)
			}
			src, oldName = *c, p
		}
		var dst bytes.Buffer
		if err := gitdiff.Apply(&dst, strings.NewReader(src), f); err != nil {
			return failed(f.NewName, "the patch does not apply to %s: %v; read the file and make the patch against its current content", or(oldName, newName), err)
		}
		if f.IsDelete || f.IsRename {
			set(oldName, nil)
		}
		if newName != "" {
			p, err := cleanPath(newName)
			if err != nil {
				return failed(newName, "%v", err)
			}
			if f.IsNew || f.IsRename {
				if c, err := get(p); err != nil || c != nil {
					return failed(p, "the patch creates %s, which already exists", p)
				}
			}
			out := dst.String()
			set(p, &out)
		}
	}
	changes := make([]change, len(order))
	for i, p := range order {
		changes[i] = change{path: p, content: work[p]}
	}
	return s.write(ctx, changes, strings.Join(order, ","))
}

// stripPrefix drops the a/ or b/ of a plain unified diff's name; gitdiff
// reports some plain headers with the new name on both sides.
func stripPrefix(name string) string {
	if strings.HasPrefix(name, "a/") || strings.HasPrefix(name, "b/") {
		return name[2:]
	}
	return name
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// budget tracks the task's diff against the base: the original content of
// every file changed so far and the changed lines of each, so that a write
// is measured as the diff it would leave behind, not as its own size.
type budget struct {
	root   *os.Root
	limits policy.Limits
	orig   map[string]*string  // base content; nil when the file did not exist
	stats  map[string]fileStat // the current diff per file
}

// fileStat is one file's part of the diff.
type fileStat struct {
	lines   int  // added plus deleted lines
	changed bool // the content or the existence differs from the base
}

func newBudget(root *os.Root, limits policy.Limits, originals map[string]*string) (*budget, error) {
	b := &budget{root: root, limits: limits, orig: map[string]*string{}, stats: map[string]fileStat{}}
	maps.Copy(b.orig, originals)
	for p, o := range b.orig {
		// Reads cannot block (see readRegular) and are bounded in size;
		// the tool set is built before any call carries a context.
		cur, err := readOptional(context.Background(), root, p)
		if err != nil {
			return nil, err
		}
		b.stats[p] = diffStat(o, cur, 0)
	}
	return b, nil
}

// readOptional returns a file's content in the tree, nil when it does not
// exist: to a patch or a budget, a missing file is content like any other.
func readOptional(ctx context.Context, root *os.Root, p string) (*string, error) {
	data, err := readRegular(ctx, root, p, maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	s := string(data)
	return &s, nil
}

// wouldBe returns the per-file diff after the changes, recording the
// original of any file not touched before (the tree still holds its base
// content).
func (b *budget) wouldBe(ctx context.Context, changes []change) (map[string]fileStat, error) {
	next := maps.Clone(b.stats)
	for _, c := range changes {
		o, ok := b.orig[c.path]
		if !ok {
			var err error
			if o, err = readOptional(ctx, b.root, c.path); err != nil {
				return nil, err
			}
			b.orig[c.path] = o
		}
		next[c.path] = diffStat(o, c.content, b.limits.DiffLines)
	}
	return next, nil
}

func (b *budget) commit(next map[string]fileStat) { b.stats = next }

func (b *budget) total(stats map[string]fileStat) (lines, files int) {
	for _, st := range stats {
		if st.changed {
			files++
			lines += st.lines
		}
	}
	return lines, files
}

// exceeds says, in words the model can act on, how a would-be diff breaks
// the limits; "" when it fits.
func (b *budget) exceeds(next map[string]fileStat) string {
	lines, files := b.total(next)
	l := b.limits
	if (l.DiffLines > 0 && lines > l.DiffLines) || (l.FilesChanged > 0 && files > l.FilesChanged) {
		return fmt.Sprintf("the task's diff would become %d changed lines in %d files, over the limit of %d lines and %d files. Make a smaller change, or undo part of an earlier one.",
			lines, files, l.DiffLines, l.FilesChanged)
	}
	return ""
}

func (b *budget) snapshot() map[string]*string { return maps.Clone(b.orig) }

func (b *budget) touched() []string {
	var out []string
	for p, st := range b.stats {
		if st.changed {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// diffStat measures the diff between two versions of a file. capLines > 0
// stops counting once the diff is known to exceed it, which bounds the cost
// of a rewrite that will be refused anyway.
func diffStat(a, b *string, capLines int) fileStat {
	switch {
	case a == nil && b == nil:
		return fileStat{}
	case a == nil:
		return fileStat{lines: countLines(*b), changed: true}
	case b == nil:
		return fileStat{lines: countLines(*a), changed: true}
	case *a == *b:
		return fileStat{}
	}
	return fileStat{lines: editDistance(splitLines(*a), splitLines(*b), capLines), changed: true}
}

func countLines(s string) int { return len(splitLines(s)) }

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}

// editDistance is the number of lines added plus deleted between a and b
// (Myers' O(ND) algorithm after trimming the common prefix and suffix). With
// capD > 0 it returns capD+1 as soon as the distance is known to exceed capD.
func editDistance(a, b []string, capD int) int {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return n + m
	}
	maxD := n + m
	if capD > 0 && capD < maxD {
		maxD = capD
	}
	off := n + m
	v := make([]int, 2*(n+m)+2)
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return d
			}
		}
	}
	return maxD + 1
}
