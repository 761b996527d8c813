package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/workspace"
)

// cmdRun makes a change on a local checkout, without GitHub, as a worker
// makes one (runner/change): the checkout becomes a workspace, setup
// prepares its environment, the checks run on the base, the loop runs in
// a sandbox, the worker's gate judges the tree's change, the checks run
// again in a fresh sandbox and the reproduction proves the fix. DIR is
// changed only with --apply and only when all of them pass.
func cmdRun(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("run", env)
	var f runFlags
	f.register(fs)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if strings.TrimSpace(f.task) == "" {
		return usageErrorf(fs, "--task is required")
	}
	src, err := filepath.Abs(f.repo)
	if err != nil {
		return err
	}
	server, policy, err := f.policy(src)
	if err != nil {
		return err
	}
	local, err := openLocal(ctx, src, f.sb.setupCA, server)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer local.close()
	ws := local.ws

	llmCfg, err := llm.ConfigFromEnv(env.Getenv)
	if err != nil {
		return err
	}
	model, err := llm.New(llmCfg)
	if err != nil {
		return err
	}

	id := fmt.Sprintf("run-%d", os.Getpid())
	drv, err := f.sb.driver(ctx, id, nil)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer drv.Close()
	envs, err := f.envs.open(f.dataDir)
	if err != nil {
		return fmt.Errorf("run: open the environment cache: %w", err)
	}
	owner, err := envcache.LocalOwner(src)
	if err != nil {
		return fmt.Errorf("run: setup: %w", err)
	}
	out := env.Stdout
	if n := policy.Limits.Attempts; n > 1 {
		// Best of N is the worker's: it needs a checkout per attempt.
		fmt.Fprintf(out, "limits.attempts is %d; agentbot run makes one attempt\n", n)
	}
	res, err := change.Make(ctx, change.Change{
		ID: id, Tree: ws, Policy: policy, Sandbox: drv,
		// The policy's image, which the server config's sandbox.images
		// bounds, is every container's, as on a worker.
		Setup: newRunSetup(drv, policy, server, id, ws.Dir(), local.caBundle, env.Getenv, out),
		Envs:  envs, Owner: owner,
		Task:  prompts.TaskData{Repo: filepath.Base(src), Instructions: f.task},
		Model: model,
		Hooks: func(context.Context, int, string) (change.Hooks, error) {
			return change.Hooks{Observe: func(e agent.Event) { fmt.Fprintln(out, progressLine(e)) }}, nil
		},
		Report: func(_ context.Context, e change.Event) error {
			if e.Done && e.Setup != "" {
				fmt.Fprintln(out, e.Setup)
			}
			return nil
		},
	})
	if f.result != "" {
		if err := writeRunResult(f.result, res); err != nil {
			return fmt.Errorf("run: --result: %w", err)
		}
	}
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := reportChange(out, res); err != nil {
		return err
	}
	if f.apply {
		n, err := applyChange(ctx, ws, f.task, src)
		if err != nil {
			return fmt.Errorf("run: apply the change to %s: %w", src, err)
		}
		fmt.Fprintf(out, "\napplied %d files to %s\n", n, src)
	}
	return nil
}

// runFlags are agentbot run's flags: the task, and every flag of a
// worker that changes how a change is made, by the same name.
type runFlags struct {
	repo, task, model, fastModel, dataDir, result string
	checks                                        checkFlags
	apply                                         bool
	sb                                            sandboxFlags
	setup                                         setupFlags
	envs                                          envCacheFlags
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.repo, "repo", ".", "the local checkout to work on; it is copied, and changed only with --apply")
	fs.StringVar(&f.task, "task", "", "what the agent should do")
	fs.Var(&f.checks, "check", "an acceptance check command, fastest first; repeatable; replaces the policy's checks")
	fs.BoolVar(&f.apply, "apply", false, "write the change into --repo when the gate, the checks and the reproduction pass")
	fs.StringVar(&f.model, "model", "", "the model that edits; default the policy's model.edit")
	fs.StringVar(&f.fastModel, "fast-model", "", "the model that digests old context; default the policy's model.fast, else --model")
	fs.StringVar(&f.result, "result", "", "write the change's result (the checks on the base and in the fresh sandbox, the gate's verdict, the reproduction, the diff, the usage) to this file as JSON")
	f.sb.register(fs)
	f.sb.registerOlderNames(fs)
	f.setup.register(fs)
	fs.StringVar(&f.dataDir, "data-dir", "", "where the prepared environments are kept (envs/ in it), as a worker's --data-dir; default the worker's")
	f.envs.register(fs)
}

// policy is the server config run works under and the checkout's policy
// under it, with the flags' checks, network and models.
func (f *runFlags) policy(src string) (policy.ServerConfig, policy.Policy, error) {
	server, err := f.setup.server()
	if err != nil {
		return server, policy.Policy{}, err
	}
	server = server.WithDefaultImage(f.sb.image)
	policy, err := eval.LoadPolicyFor(src, server, f.checks)
	if _, ok := errors.AsType[*eval.NoChecksError](err); ok {
		return server, policy, fmt.Errorf("%w; or pass --check", err)
	}
	if err != nil && !f.setup.network && strings.Contains(err.Error(), "does not allow network during setup") {
		return server, policy, fmt.Errorf("%w\n(agentbot run: pass --setup-network with an --allow-host for each host setup needs)", err)
	}
	if err != nil {
		return server, policy, err
	}
	if f.setup.network {
		policy.Setup.Network = true
	}
	policy.Model.Edit = cmp.Or(f.model, policy.Model.Edit)
	policy.Model.Fast = cmp.Or(f.fastModel, policy.Model.Fast)
	if policy.Model.Edit == "" {
		return server, policy, errors.New("run: no model: set model.edit in .github/agent.yml or pass --model")
	}
	return server, policy, nil
}

// reportChange prints what became of the change — the loop's end, the
// diff, the verification, the reproduction — and returns an exit of 1 for
// a change that is not one to apply, saying which step ended it.
func reportChange(w io.Writer, res change.Result) error {
	end := res.Ended
	if end != nil {
		switch cause := end.Cause.(type) {
		case *change.SetupFailure:
			if cause.Refused != "" {
				return &exitError{code: 1, err: fmt.Errorf("%s; the agent did not start", cause.Error())}
			}
			return &exitError{code: 1, err: fmt.Errorf("setup %q exited %d (timed out: %v); the agent did not start:\n%s", cause.Run, cause.Exit, cause.TimedOut, strings.TrimSpace(cause.Output))}
		case *change.CannotRun:
			return &exitError{code: 1, err: fmt.Errorf("%s; the agent did not start. %s\n%s", cause.Error(), cause.Fix, cause.Evidence)}
		}
	}
	report(w, res.Loop, res.Diff())
	if end != nil && end.Step == change.StepLoop {
		return &exitError{code: 1, err: fmt.Errorf("the task did not succeed: %s", stopText(res.Loop))}
	}
	if end != nil && end.Step == change.StepGate && res.Verified == nil {
		return &exitError{code: 1, err: fmt.Errorf("the gate refuses the change, as a worker's would; nothing is applied: %s", end.Reason)}
	}
	if res.Verified != nil {
		reportVerification(w, *res.Verified)
	}
	if end != nil && end.Step == change.StepVerification {
		return &exitError{code: 1, err: fmt.Errorf("%s: nothing is applied", end.Reason)}
	}
	if res.Reproduction != nil {
		reportReproduction(w, res.Reproduction)
	}
	if end != nil {
		return &exitError{code: 1, err: fmt.Errorf("%s; nothing is applied", end.Reason)}
	}
	return nil
}

// reportVerification prints the verification's checks.
func reportVerification(w io.Writer, v change.Verification) {
	fmt.Fprintf(w, "\nverified in a fresh sandbox (%.12s, in which no agent command ran):\n", v.Container)
	for _, c := range v.Checks {
		fmt.Fprintf(w, "  %-8s %-5v exit %d  %5dms  %s\n", c.Name, passFail(c.Passed), c.ExitCode, c.Millis, c.Run)
	}
	for _, c := range v.NotRun {
		fmt.Fprintf(w, "  %-8s not run            %s\n", c.Name, c.Run)
	}
	if v.Incident() {
		last := v.Checks[len(v.Checks)-1]
		fmt.Fprintf(w, "SAFETY INCIDENT: the checks passed in the agent's sandbox and fail in a fresh one; %s said:\n%s\n", last.Name, last.Output)
	}
}

// reportReproduction prints whether a test proves the fix.
func reportReproduction(w io.Writer, rp *change.Reproduction) {
	switch {
	case rp.Reproduced && rp.Existing:
		fmt.Fprintf(w, "\nreproduced: %s failed on %s before the change\n", strings.Join(rp.Tests, ", "), change.ShortSHA(rp.Base))
	case rp.Reproduced:
		fmt.Fprintf(w, "\nreproduced: the new and changed tests (%s) fail on %s without the fix\n", strings.Join(rp.Files, ", "), change.ShortSHA(rp.Base))
	default:
		fmt.Fprintf(w, "\nnot reproduced (quality.reproduce: %s): %s\n", rp.Mode, rp.Why)
	}
}

// runResult is --result's JSON: what the worker would report of the
// change.
type runResult struct {
	// Ended says which step ended the change and why; nil for a change
	// to apply.
	Ended *runEnded `json:"ended,omitempty"`
	// Gate is "passed", or the gate's refusal; "" when the change never
	// reached it.
	Gate         string               `json:"gate,omitempty"`
	Base         *change.Verification `json:"base_checks,omitempty"`
	Verified     *change.Verification `json:"verified,omitempty"`
	Reproduction *change.Reproduction `json:"reproduction,omitempty"`
	Diff         string               `json:"diff"`
	Usage        llm.Usage            `json:"usage"`
}

type runEnded struct {
	Step   change.Step `json:"step"`
	State  app.State   `json:"state"`
	Reason string      `json:"reason"`
}

// writeRunResult writes res as --result's JSON to file.
func writeRunResult(file string, res change.Result) error {
	out := runResult{Base: res.Base, Verified: res.Verified, Reproduction: res.Reproduction, Diff: res.Diff(), Usage: res.Usage()}
	if e := res.Ended; e != nil {
		out.Ended = &runEnded{Step: e.Step, State: e.State, Reason: e.Reason}
	}
	switch e := res.Ended; {
	case e != nil && e.Step == change.StepGate && res.Verified == nil:
		out.Gate = e.Reason
	case res.Gate != nil:
		out.Gate = "passed"
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
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
