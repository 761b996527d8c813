package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// cmdRun runs the agent loop on a local checkout, without GitHub: the tree
// is copied, the loop runs in a sandbox, and DIR is changed only with --apply.
func cmdRun(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("run", env)
	repo := fs.String("repo", ".", "the local checkout to work on; it is copied, and changed only with --apply")
	task := fs.String("task", "", "what the agent should do")
	var checks checkFlags
	fs.Var(&checks, "check", "an acceptance check command, fastest first; repeatable; replaces the policy's checks")
	script := fs.String("model-script", "", "answer from this llmtest script file instead of a model")
	apply := fs.Bool("apply", false, "write the change into --repo when the checks pass")
	image := fs.String("image", "agentbot-sandbox:dev", "the sandbox image")
	modelName := fs.String("model", "", "the model that edits; default the policy's model.edit")
	executor := fs.String("executor", "", "the static agentbot binary run inside the sandbox; default this binary")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if strings.TrimSpace(*task) == "" {
		return errors.New("run: --task is required")
	}
	src, err := filepath.Abs(*repo)
	if err != nil {
		return err
	}
	policy, err := runPolicy(src, checks)
	if err != nil {
		return err
	}
	if *modelName != "" {
		policy.Model.Edit = *modelName
	}
	switch {
	case policy.Model.Edit == "" && *script != "":
		policy.Model.Edit = "scripted"
	case policy.Model.Edit == "":
		return errors.New("run: no model: set model.edit in .github/agent.yml or pass --model")
	}
	if *executor == "" {
		if *executor, err = os.Executable(); err != nil {
			return fmt.Errorf("run: find this binary for the sandbox: %w", err)
		}
	}

	tmp, err := os.MkdirTemp("", "agentbot-run-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	tree, err := copyTree(ctx, src, tmp)
	if err != nil {
		return err
	}
	defer tree.root.Close()

	model, closeModel, err := runModel(*script, env)
	if err != nil {
		return err
	}
	defer closeModel()

	taskID := fmt.Sprintf("run-%d", os.Getpid())
	drv, err := sandbox.New(ctx, sandbox.Options{Image: *image, ExecutorPath: *executor, WorkerID: taskID})
	if err != nil {
		return fmt.Errorf("run: connect to Docker: %w", err)
	}
	defer drv.Close()
	box, err := drv.Start(ctx, sandbox.Spec{TaskID: taskID, WorkTree: tree.dir, CPUs: policy.Sandbox.CPUs, Memory: policy.Sandbox.Memory, Pids: policy.Sandbox.Pids})
	if err != nil {
		return fmt.Errorf("run: start the sandbox: %w", err)
	}
	defer box.Close(ctx)

	system, taskText, err := runPrompts(tree, src, *task, policy)
	if err != nil {
		return err
	}
	out := env.Stdout
	a, err := agent.New(ctx, agent.Config{
		TaskID: taskID, Policy: policy, Model: model, Runner: box, Workspace: tree, Store: &memStore{},
		System: system, Task: taskText,
		Observe: func(e agent.Event) { fmt.Fprintln(out, progressLine(e)) },
	})
	if err != nil {
		return err
	}
	st, err := a.Run(ctx)
	if err != nil {
		return err
	}
	report(out, st)
	if st.Status != app.StateSucceeded {
		return &exitError{code: 1, err: fmt.Errorf("the task did not succeed: %s", stopText(st))}
	}
	if *apply {
		// The diff, not the tools' list, says what changed: a command the
		// shell policy allowed may have written files too.
		changed, err := tree.changed(ctx)
		if err == nil {
			err = applyFiles(tree.dir, src, changed)
		}
		if err != nil {
			return fmt.Errorf("run: apply the change to %s: %w", src, err)
		}
		fmt.Fprintf(out, "\napplied %d files to %s\n", len(changed), src)
	}
	return nil
}

// checkFlags collects repeated --check flags.
type checkFlags []string

func (c *checkFlags) String() string { return strings.Join(*c, ", ") }

func (c *checkFlags) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("a check may not be empty")
	}
	*c = append(*c, v)
	return nil
}

// runPolicy is the repository's .github/agent.yml over the defaults when
// there is one, with --check flags replacing its checks.
func runPolicy(src string, checks []string) (app.Policy, error) {
	var layers []*app.RawPolicy
	file := filepath.Join(src, filepath.FromSlash(app.PolicyPath))
	data, err := os.ReadFile(file)
	switch {
	case err == nil:
		raw, err := app.ParsePolicy(file, data)
		if err != nil {
			return app.Policy{}, errors.New(app.ErrorMessage(err))
		}
		layers = append(layers, raw)
	case !errors.Is(err, fs.ErrNotExist):
		return app.Policy{}, err
	}
	p, err := app.BuildPolicy(app.DefaultServerConfig(), layers...)
	if err != nil {
		return app.Policy{}, errors.New(app.ErrorMessage(err))
	}
	if len(checks) > 0 {
		p.Checks = nil
		for i, c := range checks {
			p.Checks = append(p.Checks, app.Check{Name: fmt.Sprintf("check%d", i+1), Run: c, Timeout: 15 * time.Minute})
		}
	}
	if err := p.RequireChecks(); err != nil {
		return app.Policy{}, fmt.Errorf("%s; or pass --check", app.ErrorMessage(err))
	}
	return p, nil
}

// runModel is the scripted model of --model-script, served on loopback, or
// the endpoint of AGENTBOT_LLM_BASE_URL.
func runModel(script string, env Env) (*llm.Client, func(), error) {
	cfg, err := llm.ConfigFromEnv(env.Getenv)
	if err != nil {
		return nil, nil, err
	}
	stop := func() {}
	if script != "" {
		s, err := llmtest.Load(script)
		if err != nil {
			return nil, nil, fmt.Errorf("run: --model-script: %w", err)
		}
		srv, err := llmtest.Start(s)
		if err != nil {
			return nil, nil, err
		}
		cfg = llm.Config{BaseURL: srv.URL()}
		stop = srv.Close
	}
	c, err := llm.New(cfg)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return c, stop, nil
}

func runPrompts(tree *localTree, src, task string, p app.Policy) (system, taskText string, err error) {
	repo, err := prompts.LoadRepo(tree.root.FS())
	if err != nil {
		return "", "", err
	}
	sd := prompts.SystemData{Checks: p.Checks, Paths: p.Paths, Limits: p.Limits, ShellOff: p.Tools.Shell.Policy == app.ApprovalOff}
	if p.Tools.Shell.Policy == app.ApprovalAllowlist {
		sd.ShellAllow = p.Tools.Shell.Allow
	}
	if system, err = prompts.System(sd); err != nil {
		return "", "", err
	}
	taskText, err = prompts.Task(prompts.TaskData{Repo: filepath.Base(src), Instructions: task, Context: repo})
	return system, taskText, err
}

// progressLine is one step: step, tool, target, result size, tokens so far,
// elapsed.
func progressLine(e agent.Event) string {
	tool := e.Tool
	if tool == "" {
		tool = "(text)"
	}
	target := e.Target
	if len(target) > 40 {
		target = target[:39] + "…"
	}
	return fmt.Sprintf("step %3d  %-12s %-40s %-15s %7d B %9d tok %7.1fs", e.Step, tool, target, e.Outcome, e.ResultBytes, e.Tokens, e.Elapsed.Seconds())
}

// report ends a run: why it stopped, the diff, the checks, the usage.
func report(w io.Writer, st *agent.State) {
	fmt.Fprintf(w, "\n%s after %d steps: %s\n", st.Status, st.Step, stopText(st))
	if st.Summary != "" {
		fmt.Fprintf(w, "summary: %s\n", st.Summary)
	}
	if st.Diff == "" {
		fmt.Fprintln(w, "\nno changes")
	} else {
		fmt.Fprintf(w, "\n%s", st.Diff)
	}
	fmt.Fprintln(w, "\nchecks:")
	for _, c := range st.Checks {
		fmt.Fprintf(w, "  %-8s %-5v exit %d  %5dms  %s\n", c.Name, passFail(c.Passed), c.ExitCode, c.Millis, c.Run)
	}
	u, n := st.Usage, st.Counts
	fmt.Fprintf(w, "usage: %d prompt tokens (%d cached), %d completion tokens, $%.4f; %d tool calls, %d invalid, %d writes and %d commands refused; %d digests saved %d tokens\n",
		u.PromptTokens, u.CachedTokens, u.CompletionTokens, u.CostUSD, n.ToolCalls, n.InvalidCalls, n.BlockedWrites, n.BlockedCommands, n.Digests, n.TokensSaved)
}

func passFail(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

func stopText(st *agent.State) string {
	switch {
	case st.Stop != nil:
		return fmt.Sprintf("%s (%s)", st.Stop.Reason, st.Stop.Detail)
	case st.Pending != nil:
		return fmt.Sprintf("%s %s needs a human's approval, which agentbot run cannot give", st.Pending.Name, st.Pending.Arguments)
	}
	return string(st.Status)
}

// memStore keeps the state of the one task of a run in memory.
type memStore struct {
	mu    sync.Mutex
	state []byte
}

func (m *memStore) SaveState(_ context.Context, _ string, state []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state = state
	return nil
}

func (m *memStore) LoadState(context.Context, string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, nil
}

// localTree is a copy of a local checkout with its base commit in a git dir
// beside it, never inside: the sandbox mounts only the tree, so what runs
// there cannot plant hooks or config that the host's git would obey.
type localTree struct {
	dir, gitDir, home string
	root              *os.Root
}

// copyTree copies src's files (what git tracks plus untracked files it
// does not ignore, or everything but .git outside a repository) into tmp and
// commits them as the base.
func copyTree(ctx context.Context, src, tmp string) (*localTree, error) {
	t := &localTree{dir: filepath.Join(tmp, "tree"), gitDir: filepath.Join(tmp, "git"), home: filepath.Join(tmp, "home")}
	for _, d := range []string{t.dir, t.home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
	}
	files, err := sourceFiles(ctx, src)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if err := copyFile(src, t.dir, f); err != nil {
			return nil, fmt.Errorf("copy %s: %w", f, err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=agentbot", "-c", "user.email=agentbot@localhost", "commit", "-q", "--allow-empty", "-m", "base"},
	} {
		if _, err := t.git(ctx, nil, args...); err != nil {
			return nil, err
		}
	}
	if err := sandbox.ShareTree(t.dir); err != nil {
		return nil, err
	}
	if t.root, err = os.OpenRoot(t.dir); err != nil {
		return nil, err
	}
	return t, nil
}

func sourceFiles(ctx context.Context, src string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(src, ".git")); err == nil {
		out, err := exec.CommandContext(ctx, "git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
		if err != nil {
			return nil, fmt.Errorf("list the files of %s: %w", src, err)
		}
		return strings.FieldsFunc(string(out), func(r rune) bool { return r == 0 }), nil
	}
	var files []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(src, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// copyFile copies a regular file or a symlink; a tracked file deleted in the
// checkout is skipped.
func copyFile(src, dst, rel string) error {
	from, to := filepath.Join(src, rel), filepath.Join(dst, rel)
	fi, err := os.Lstat(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(from)
		if err != nil {
			return err
		}
		return os.Symlink(target, to)
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, fi.Mode().Perm())
	}
	return nil
}

func (t *localTree) git(ctx context.Context, stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	full := append([]string{"--git-dir=" + t.gitDir, "--work-tree=" + t.dir, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false", "-c", "safe.directory=*"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = t.dir
	cmd.Env = []string{"HOME=" + t.home, "GIT_CONFIG_NOSYSTEM=1", "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// Root returns the tree.
func (t *localTree) Root() *os.Root { return t.root }

// Diff returns the tree's change against the base, new files included.
func (t *localTree) Diff(ctx context.Context) (string, error) {
	if _, err := t.git(ctx, nil, "add", "-A"); err != nil {
		return "", err
	}
	return t.git(ctx, nil, "diff", "--cached", "--binary", "HEAD")
}

// Apply applies a saved diff to the tree.
func (t *localTree) Apply(ctx context.Context, diff string) error {
	_, err := t.git(ctx, []byte(diff), "apply", "--binary", "-")
	return err
}

// changed lists the paths the diff touches, both sides of a rename.
func (t *localTree) changed(ctx context.Context) ([]string, error) {
	if _, err := t.git(ctx, nil, "add", "-A"); err != nil {
		return nil, err
	}
	out, err := t.git(ctx, nil, "diff", "--cached", "--name-only", "--no-renames", "-z", "HEAD")
	if err != nil {
		return nil, err
	}
	return strings.FieldsFunc(out, func(r rune) bool { return r == 0 }), nil
}

// applyFiles copies the given files from the tree into dst, and removes
// from dst those the tree no longer has, through os.Root on both sides.
func applyFiles(tree, dst string, touched []string) error {
	from, err := os.OpenRoot(tree)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer to.Close()
	for _, p := range touched {
		fi, err := from.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			if err := to.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		data, err := from.ReadFile(p)
		if err != nil {
			return err
		}
		if dir := filepath.Dir(p); dir != "." {
			if err := to.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := to.WriteFile(p, data, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
