package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/workspace"
)

// A merged pull request is a solved task whose solution a reviewer
// accepted: Capture turns one into a task of a suite, so that a team's own
// history becomes the benchmark a model is chosen by. The task's snapshot
// is the tree the pull request was merged onto, its issue the one the pull
// request closed, and its hidden tests the tests the merge added or
// changed: they are what the merged change made pass.

// History is what Capture reads of a repository on GitHub
// (app/github.Installation satisfies it).
type History interface {
	PullRequest(ctx context.Context, repo string, number int) (app.MergedPull, error)
	Commit(ctx context.Context, repo, ref string) (app.CommitInfo, error)
	Tree(ctx context.Context, repo, ref string) ([]app.RepoFile, error)
	File(ctx context.Context, repo, path, ref string) ([]byte, error)
	Issue(ctx context.Context, repo string, number int) (app.IssueInfo, error)
}

// CaptureOptions say which pull request to capture and where.
type CaptureOptions struct {
	Repo string // owner/name
	PR   int
	// Suite is the suite directory the task is written into, as
	// Suite/Name; it is created when missing.
	Suite string
	// Name is the task's directory name; default "<name>-<PR>".
	Name string
	// Checks replace the snapshot's own checks (its .github/agent.yml);
	// they are required when it has none.
	Checks []string
	// Hidden are the commands that judge the task once the hidden tests
	// are laid over the tree; default the checks.
	Hidden []string
}

// Captured says what Capture wrote.
type Captured struct {
	Dir   string // the task's directory
	Base  string // the commit of the snapshot
	Merge string // the merge commit
	// Issue is the issue whose text the task gives, 0 when the pull
	// request closed none and its own title and body are used.
	Issue int
	// HiddenTests are the test files the merge added or changed.
	HiddenTests []string
	// Changed are the other files the merge added, changed or deleted:
	// what the reference trajectory replays.
	Changed []string
	// Skipped are the snapshot's symbolic links and submodules, which the
	// contents API does not serve as files and the snapshot leaves out.
	Skipped []string
}

var taskNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// Capture writes pull request opts.PR of opts.Repo, which must be merged,
// as a task of the suite at opts.Suite: the snapshot (repo/) at the
// commit it was merged onto, the issue it closes (or its own text) in
// task.yaml, the merged versions of the tests it added or changed in
// hidden/, and trajectory.yaml, a scripted model's answers that replay the
// merged change, so that "agentbot eval" on the task with no model
// configured shows the hidden tests passing with it. The task is checked
// as Load would check it and only then moved into place; an existing
// task of the same name is an error, never overwritten.
func Capture(ctx context.Context, h History, opts CaptureOptions) (Captured, error) {
	var c Captured
	if opts.Name == "" {
		_, name, _ := strings.Cut(opts.Repo, "/")
		opts.Name = fmt.Sprintf("%s-%d", name, opts.PR)
	}
	if !taskNameRE.MatchString(opts.Name) {
		return c, fmt.Errorf("task name %q: want letters, digits, '.', '_' and '-'", opts.Name)
	}
	if opts.PR <= 0 {
		return c, fmt.Errorf("pull request number %d: want 1 or more", opts.PR)
	}
	pr, err := h.PullRequest(ctx, opts.Repo, opts.PR)
	if err != nil {
		return c, err
	}
	if !pr.Merged || pr.MergeCommit == "" {
		return c, fmt.Errorf("%s#%d is not merged: only a merged pull request shows a change reviewers accepted", opts.Repo, opts.PR)
	}
	c.Merge = pr.MergeCommit
	if c.Base, err = mergedOnto(ctx, h, opts.Repo, pr); err != nil {
		return c, err
	}
	before, err := h.Tree(ctx, opts.Repo, c.Base)
	if err != nil {
		return c, err
	}
	after, err := h.Tree(ctx, opts.Repo, c.Merge)
	if err != nil {
		return c, err
	}
	changes := compareTrees(before, after)
	for _, ch := range changes {
		if !ch.deleted && workspace.IsTestFile(ch.path) {
			c.HiddenTests = append(c.HiddenTests, ch.path)
		} else {
			c.Changed = append(c.Changed, ch.path)
		}
	}
	if len(c.HiddenTests) == 0 {
		return c, fmt.Errorf("%s#%d adds or changes no test file: nothing would tell a fix from no fix", opts.Repo, opts.PR)
	}
	title, body, issue, err := issueText(ctx, h, opts.Repo, pr)
	if err != nil {
		return c, err
	}
	c.Issue = issue

	final := filepath.Join(opts.Suite, opts.Name)
	if _, err := os.Lstat(final); err == nil {
		return c, fmt.Errorf("%s exists: remove it or choose another --name", final)
	}
	if err := os.MkdirAll(opts.Suite, 0o755); err != nil {
		return c, fmt.Errorf("create suite: %w", err)
	}
	// Written beside its final place, so that the rename cannot cross
	// file systems and a failed capture leaves no half task behind.
	tmp, err := os.MkdirTemp(opts.Suite, "."+opts.Name+"-")
	if err != nil {
		return c, fmt.Errorf("create task directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	w := &taskWriter{ctx: ctx, h: h, repo: opts.Repo, dir: tmp}
	for _, f := range before {
		if f.Type != "file" {
			c.Skipped = append(c.Skipped, f.Path)
			continue
		}
		if err := w.copy(RepoDir, f.Path, c.Base); err != nil {
			return c, err
		}
	}
	for _, p := range c.HiddenTests {
		if err := w.copy(HiddenDir, p, c.Merge); err != nil {
			return c, err
		}
	}
	traj, err := w.trajectory(changes, c.Merge, pr)
	if err != nil {
		return c, err
	}
	replay := fmt.Sprintf("# Replays the change of %s#%d: agentbot eval with no model shows it passing the hidden tests.\n", opts.Repo, opts.PR)
	if err := writeYAML(filepath.Join(tmp, TrajectoryFile), replay, traj); err != nil {
		return c, err
	}
	hidden := opts.Hidden
	if len(hidden) == 0 {
		p, err := LoadPolicy(filepath.Join(tmp, RepoDir), opts.Checks)
		if err != nil {
			if _, ok := errors.AsType[*NoChecksError](err); ok {
				return c, fmt.Errorf("%w; give them with --check", err)
			}
			return c, err
		}
		for _, ch := range p.Checks {
			hidden = append(hidden, ch.Run)
		}
	}
	task := capturedTask{Title: title, Body: body, Checks: opts.Checks, Hidden: hidden}
	from := fmt.Sprintf("# Captured from %s#%d, merged as %s onto %s.\n", opts.Repo, opts.PR, c.Merge, c.Base)
	if err := writeYAML(filepath.Join(tmp, TaskFile), from, task); err != nil {
		return c, err
	}
	if _, err := loadTask(tmp); err != nil {
		return c, fmt.Errorf("the captured task does not load: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return c, fmt.Errorf("move the task into place: %w", err)
	}
	c.Dir = final
	return c, nil
}

// mergedOnto returns the commit the pull request's change was applied to:
// the merge commit's first parent for a merge commit or a squash; for a
// rebase, which replays the branch's commits one by one and keeps the
// last one's message, the commit before the first replayed one.
func mergedOnto(ctx context.Context, h History, repo string, pr app.MergedPull) (string, error) {
	m, err := h.Commit(ctx, repo, pr.MergeCommit)
	if err != nil {
		return "", err
	}
	if len(m.Parents) == 0 {
		return "", fmt.Errorf("%s#%d: merge commit %s has no parent to start from", repo, pr.Number, pr.MergeCommit)
	}
	steps := 1
	if len(m.Parents) == 1 && pr.Commits > 1 && pr.HeadSHA != "" {
		head, err := h.Commit(ctx, repo, pr.HeadSHA)
		if err != nil {
			return "", err
		}
		if head.Message == m.Message {
			steps = pr.Commits // rebased: a squash has a message of its own
		}
	}
	base := m
	for range steps - 1 {
		if base, err = h.Commit(ctx, repo, base.Parents[0]); err != nil {
			return "", err
		}
		if len(base.Parents) == 0 {
			return "", fmt.Errorf("%s#%d: history ends inside the pull request's %d rebased commits", repo, pr.Number, steps)
		}
	}
	return base.Parents[0], nil
}

// issueText is the text the task gives the model: the first issue of this
// repository the pull request closes, or failing that the pull request's
// own title and body, which may describe the fix as well as the problem.
func issueText(ctx context.Context, h History, repo string, pr app.MergedPull) (title, body string, issue int, err error) {
	for _, n := range app.ClosingIssues(repo, pr.Body) {
		is, err := h.Issue(ctx, repo, n)
		if app.ErrorCode(err) == app.ENotFound {
			continue // a reference to nothing readable
		}
		if err != nil {
			return "", "", 0, err
		}
		if is.Pull != nil {
			continue // a pull request, not a problem statement
		}
		return is.Title, cmpOr(is.Body, is.Title), n, nil
	}
	return pr.Title, cmpOr(pr.Body, pr.Title), 0, nil
}

func cmpOr(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// change is one path whose file the merge added, changed or deleted.
type change struct {
	path    string
	deleted bool
	added   bool
}

// compareTrees lists what differs between two trees' regular files, by
// path and blob, in path order.
func compareTrees(before, after []app.RepoFile) []change {
	old := map[string]app.RepoFile{}
	for _, f := range before {
		old[f.Path] = f
	}
	var out []change
	seen := map[string]bool{}
	for _, f := range after {
		seen[f.Path] = true
		o, ok := old[f.Path]
		switch {
		case f.Type != "file":
		case !ok || o.Type != "file":
			out = append(out, change{path: f.Path, added: true})
		case o.SHA != f.SHA:
			out = append(out, change{path: f.Path})
		}
	}
	for _, f := range before {
		if !seen[f.Path] && f.Type == "file" {
			out = append(out, change{path: f.Path, deleted: true})
		}
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.path, b.path) })
	return out
}

// taskWriter writes files read from GitHub into a task directory, through
// os.Root so that no path GitHub names can lead out of it.
type taskWriter struct {
	ctx  context.Context
	h    History
	repo string
	dir  string
}

func (w *taskWriter) copy(sub, name, ref string) error {
	data, err := w.h.File(w.ctx, w.repo, name, ref)
	if err != nil {
		return err
	}
	return writeUnder(filepath.Join(w.dir, sub), name, data)
}

// snapshot reads name from the snapshot written so far.
func (w *taskWriter) snapshot(name string) ([]byte, error) {
	root, err := os.OpenRoot(filepath.Join(w.dir, RepoDir))
	if err != nil {
		return nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read %s from the snapshot: %w", name, err)
	}
	return data, nil
}

func writeUnder(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if d := path.Dir(name); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := root.WriteFile(name, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// The reference trajectory, in the scripted model's format
// (runner/llm/llmtest): one step of tool calls that make the merged
// change, other than its tests, then finish.
type (
	trajectoryFile struct {
		Steps []trajectoryStep `yaml:"steps"`
	}
	trajectoryStep struct {
		Text      string           `yaml:"text,omitempty"`
		ToolCalls []trajectoryCall `yaml:"tool_calls"`
	}
	trajectoryCall struct {
		Name      string            `yaml:"name"`
		Arguments map[string]string `yaml:"arguments"`
	}
)

// trajectory replays the merge's non-test changes: write_file for a file
// it added, edit_file of the whole text for one it changed, apply_patch
// for one it deleted.
func (w *taskWriter) trajectory(changes []change, merge string, pr app.MergedPull) (trajectoryFile, error) {
	step := trajectoryStep{Text: fmt.Sprintf("Replaying the change merged in #%d (%s).", pr.Number, shortSHA(merge))}
	for _, ch := range changes {
		if !ch.deleted && workspace.IsTestFile(ch.path) {
			continue
		}
		var old, updated []byte
		var err error
		if !ch.added {
			// The snapshot already holds the file as it was at the base.
			if old, err = w.snapshot(ch.path); err != nil {
				return trajectoryFile{}, err
			}
		}
		if !ch.deleted {
			if updated, err = w.h.File(w.ctx, w.repo, ch.path, merge); err != nil {
				return trajectoryFile{}, err
			}
		}
		switch {
		case ch.added:
			step.ToolCalls = append(step.ToolCalls, trajectoryCall{Name: "write_file", Arguments: map[string]string{"path": ch.path, "content": string(updated)}})
		case ch.deleted:
			step.ToolCalls = append(step.ToolCalls, trajectoryCall{Name: "apply_patch", Arguments: map[string]string{"patch": deletionPatch(ch.path, old)}})
		case len(old) == 0:
			return trajectoryFile{}, fmt.Errorf("%s was empty before the merge: edit_file cannot replay its change", ch.path)
		default:
			step.ToolCalls = append(step.ToolCalls, trajectoryCall{Name: "edit_file", Arguments: map[string]string{"path": ch.path, "old_string": string(old), "new_string": string(updated)}})
		}
	}
	finish := trajectoryStep{ToolCalls: []trajectoryCall{{Name: "finish", Arguments: map[string]string{"summary": pr.Title}}}}
	if len(step.ToolCalls) == 0 {
		return trajectoryFile{Steps: []trajectoryStep{finish}}, nil
	}
	return trajectoryFile{Steps: []trajectoryStep{step, finish}}, nil
}

// deletionPatch is the git diff that deletes name, whose text is old.
func deletionPatch(name string, old []byte) string {
	lines := strings.SplitAfter(string(old), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\ndeleted file mode 100644\n--- a/%s\n+++ /dev/null\n@@ -1,%d +0,0 @@\n", name, name, name, len(lines))
	for _, l := range lines {
		b.WriteString("-" + l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	return b.String()
}

func shortSHA(s string) string { return s[:min(len(s), 12)] }

// capturedTask is task.yaml as Capture writes it: rawTask without the
// keys it leaves at their defaults.
type capturedTask struct {
	Title  string   `yaml:"title"`
	Body   string   `yaml:"body"`
	Checks []string `yaml:"checks,omitempty"`
	Hidden []string `yaml:"hidden,omitempty"`
}

// writeYAML writes v to file after the comment lines in header.
func writeYAML(file, header string, v any) error {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(file), err)
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(file), err)
	}
	return nil
}
