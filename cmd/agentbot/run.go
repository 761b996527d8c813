package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// cmdRun runs the agent loop on a local checkout, without GitHub, the way
// a worker makes a change: the checkout becomes a workspace, setup
// prepares its environment, the loop runs in a sandbox, the worker's gate
// judges the tree's change and the checks run again in a fresh sandbox.
// DIR is changed only with --apply and only when all of them pass.
func cmdRun(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("run", env)
	repo := fs.String("repo", ".", "the local checkout to work on; it is copied, and changed only with --apply")
	task := fs.String("task", "", "what the agent should do")
	var checks checkFlags
	fs.Var(&checks, "check", "an acceptance check command, fastest first; repeatable; replaces the policy's checks")
	script := fs.String("model-script", "", "answer from this llmtest script file instead of a model")
	apply := fs.Bool("apply", false, "write the change into --repo when the gate and the checks pass")
	modelName := fs.String("model", "", "the model that edits; default the policy's model.edit")
	var sb sandboxFlags
	sb.register(fs)
	fs.StringVar(&sb.image, "image", sb.image, "the older name of --sandbox-image")
	fs.StringVar(&sb.executor, "executor", sb.executor, "the older name of --sandbox-executor")
	var setup setupFlags
	setup.register(fs)
	dataDir := fs.String("data-dir", "", "where the prepared environments are kept (envs/ in it), as a worker's --data-dir; default the worker's")
	var envFlags envCacheFlags
	envFlags.register(fs)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if strings.TrimSpace(*task) == "" {
		return usageErrorf(fs, "--task is required")
	}
	src, err := filepath.Abs(*repo)
	if err != nil {
		return err
	}
	server, err := setup.server()
	if err != nil {
		return err
	}
	server = server.WithDefaultImage(sb.image)
	policy, err := eval.LoadPolicyFor(src, server, checks)
	if _, ok := errors.AsType[*eval.NoChecksError](err); ok {
		return fmt.Errorf("%w; or pass --check", err)
	}
	if err != nil && !setup.network && strings.Contains(err.Error(), "does not allow network during setup") {
		return fmt.Errorf("%w\n(agentbot run: pass --setup-network with an --allow-host for each host setup needs)", err)
	}
	if err != nil {
		return err
	}
	if setup.network {
		policy.Setup.Network = true
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

	local, err := openLocal(ctx, src, sb.setupCA, server)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer local.close()
	ws, caBundle := local.ws, local.caBundle

	model, closeModel, err := runModel(*script, env)
	if err != nil {
		return err
	}
	defer closeModel()

	taskID := fmt.Sprintf("run-%d", os.Getpid())
	drv, err := sb.driver(ctx, taskID, nil)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer drv.Close()
	envs, err := envFlags.open(*dataDir)
	if err != nil {
		return fmt.Errorf("run: open the environment cache: %w", err)
	}
	out := env.Stdout
	// The policy's image, which the server config's sandbox.images bounds,
	// is every container's, as on a worker.
	s := newRunSetup(drv, policy, server, taskID, ws.Dir(), caBundle, out)
	prepared, err := prepareRun(ctx, s, envs, src, ws, out)
	if err != nil {
		return err
	}
	defer prepared.Env.Release()
	st, err := eval.Local{
		Driver: drv, Policy: policy, Model: model, Repo: filepath.Base(src), Instructions: *task,
		Observe: func(e agent.Event) { fmt.Fprintln(out, progressLine(e)) },
		Env:     prepared,
	}.Run(ctx, taskID, ws)
	if err != nil {
		return err
	}
	// The host's own diff of the tree, not the loop's last record of it:
	// a command may have written files since.
	gate, gateErr := ws.Gate(ctx, policy)
	report(out, st, gate.Diff)
	if st.Status != app.StateSucceeded {
		return &exitError{code: 1, err: fmt.Errorf("the task did not succeed: %s", stopText(st))}
	}
	if _, refused := errors.AsType[*app.Error](gateErr); refused {
		return &exitError{code: 1, err: fmt.Errorf("the gate refuses the change, as a worker's would; nothing is applied: %s", app.ErrorMessage(gateErr))}
	}
	if gateErr != nil {
		return fmt.Errorf("run: gate the change: %w", gateErr)
	}
	v, err := runner.FreshVerification{Sandbox: drv, Policy: policy, Env: prepared, Setup: s}.Run(ctx, ws, gate.Tree, taskID+"-verify", policy.Checks)
	if err != nil {
		return fmt.Errorf("run: verify the checks: %w", err)
	}
	v.LoopPassed = true // verified only once the loop succeeded
	reportVerification(out, v)
	if !v.Passed {
		return &exitError{code: 1, err: fmt.Errorf("the checks pass in the agent's sandbox but fail in a fresh one: nothing is applied")}
	}
	if *apply {
		n, err := applyChange(ctx, ws, *task, src)
		if err != nil {
			return fmt.Errorf("run: apply the change to %s: %w", src, err)
		}
		fmt.Fprintf(out, "\napplied %d files to %s\n", n, src)
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
func report(w io.Writer, st *agent.State, diff string) {
	fmt.Fprintf(w, "\n%s after %d steps: %s\n", st.Status, st.Step, stopText(st))
	if st.Summary != "" {
		fmt.Fprintf(w, "summary: %s\n", st.Summary)
	}
	if diff == "" {
		fmt.Fprintln(w, "\nno changes")
	} else {
		fmt.Fprintf(w, "\n%s", diff)
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

// localAuthor commits the gated tree inside the run's own workspace, so
// that what is applied is exactly the tree the gate passed; the commit
// never leaves it.
var localAuthor = workspace.Signature{Name: "agentbot", Email: "agentbot@localhost"}

// applyChange writes the tree the gate passed into dst, the user's
// checkout, through os.Root: each file the change adds or modifies from
// its git blob, with its mode, and each it deletes removed. It returns
// how many paths it wrote or removed.
func applyChange(ctx context.Context, ws *workspace.Workspace, task, dst string) (int, error) {
	_, err := ws.Commit(ctx, workspace.CommitOptions{Message: task, Author: localAuthor})
	if errors.Is(err, workspace.ErrNoChanges) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	change, err := ws.Change(ctx)
	if err != nil {
		return 0, err
	}
	to, err := os.OpenRoot(dst)
	if err != nil {
		return 0, err
	}
	defer to.Close()
	for _, f := range change.Files {
		if err := applyFile(ctx, ws, to, f); err != nil {
			return 0, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	return len(change.Files), nil
}

// applyFile writes or removes one path of a change in to.
func applyFile(ctx context.Context, ws *workspace.Workspace, to *os.Root, f workspace.ChangedFile) error {
	// What stands at the path goes first: a file may become a symlink,
	// and a symlink in the checkout must not redirect the write.
	if err := to.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if f.Deleted {
		return nil
	}
	data, err := ws.ReadBlob(ctx, f.Object)
	if err != nil {
		return err
	}
	if dir := path.Dir(f.Path); dir != "." {
		if err := to.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	switch f.Mode {
	case "100644":
		return to.WriteFile(f.Path, data, 0o644)
	case "100755":
		return to.WriteFile(f.Path, data, 0o755)
	case "120000":
		return to.Symlink(string(data), f.Path)
	}
	return fmt.Errorf("mode %s is not a file or a symlink", f.Mode)
}
