package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// cmdRun runs the agent loop on a local checkout, without GitHub: the tree
// is copied, the loop runs in a sandbox, the checks run again in a fresh
// one, and DIR is changed only with --apply and only when both pass.
func cmdRun(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("run", env)
	repo := fs.String("repo", ".", "the local checkout to work on; it is copied, and changed only with --apply")
	task := fs.String("task", "", "what the agent should do")
	var checks checkFlags
	fs.Var(&checks, "check", "an acceptance check command, fastest first; repeatable; replaces the policy's checks")
	script := fs.String("model-script", "", "answer from this llmtest script file instead of a model")
	apply := fs.Bool("apply", false, "write the change into --repo when the checks pass")
	image := fs.String("image", "agentbot-sandbox:dev", "the sandbox image of a policy that names none in sandbox.image")
	modelName := fs.String("model", "", "the model that edits; default the policy's model.edit")
	executor := fs.String("executor", "", "the static agentbot binary run inside the sandbox; default this binary")
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
	tree, err := eval.CopyTree(ctx, src, tmp)
	if err != nil {
		return err
	}
	defer tree.Close()

	model, closeModel, err := runModel(*script, env)
	if err != nil {
		return err
	}
	defer closeModel()

	taskID := fmt.Sprintf("run-%d", os.Getpid())
	// The policy's image, which the server config's sandbox.images bounds,
	// is every container's, as on a worker.
	sandboxImage := cmp.Or(policy.Sandbox.Image, *image)
	drv, err := docker.New(ctx, docker.Options{Image: sandboxImage, ExecutorPath: *executor, WorkerID: taskID})
	if err != nil {
		return fmt.Errorf("run: connect to Docker: %w", err)
	}
	defer drv.Close()
	envs, err := envFlags.open(*dataDir)
	if err != nil {
		return fmt.Errorf("run: open the environment cache: %w", err)
	}
	out := env.Stdout
	prepared, err := runSetup(ctx, drv, envs, taskID, src, sandboxImage, tree.Dir(), policy, server, out)
	if err != nil {
		return err
	}
	defer prepared.Release()
	overlays, err := prepared.Overlays()
	if err != nil {
		return fmt.Errorf("run: the prepared environment: %w", err)
	}
	st, err := eval.Local{
		Driver: drv, Policy: policy, Model: model, Repo: filepath.Base(src), Instructions: *task,
		Observe:  func(e agent.Event) { fmt.Fprintln(out, progressLine(e)) },
		Overlays: overlays,
	}.Run(ctx, taskID, tree)
	if err != nil {
		return err
	}
	report(out, st)
	if st.Status != app.StateSucceeded {
		return &exitError{code: 1, err: fmt.Errorf("the task did not succeed: %s", stopText(st))}
	}
	v, err := verifyRun(ctx, drv, policy, tree, tmp, taskID, overlays)
	if err != nil {
		return fmt.Errorf("run: verify the checks: %w", err)
	}
	reportVerification(out, v)
	if !v.Passed {
		return &exitError{code: 1, err: fmt.Errorf("the checks pass in the agent's sandbox but fail in a fresh one: nothing is applied")}
	}
	if *apply {
		// The diff, not the tools' list, says what changed: a command the
		// shell policy allowed may have written files too.
		changed, err := tree.Changed(ctx)
		if err == nil {
			err = applyFiles(tree.Dir(), src, changed)
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
