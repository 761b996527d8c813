// Package eval runs a suite of tasks on local trees, without GitHub,
// making each run's change as a worker makes it (runner/change's Make),
// and scores them, for agentbot eval, so that a team can compare models and
// prompts on its own repositories before it trusts one. LoadPolicy reads
// a local checkout's policy, as agentbot run does.
//
// A suite is a directory with one directory per task:
//
//	SUITE/<task>/task.yaml        the issue (title, body), checks, hidden commands
//	SUITE/<task>/repo/            the repository snapshot, copied fresh for every run
//	SUITE/<task>/hidden/          tests laid over the tree only after the loop ends
//	SUITE/<task>/trajectory.yaml  the scripted model's answers (runner/llm/llmtest)
//
// task.yaml is decoded strictly (unknown keys and wrong types are errors
// with their line):
//
//	title: The last page of a listing is missing
//	body: |
//	  With 5 items and 2 to a page, page 3 comes back empty.
//	checks: ["go test ./..."]        # optional: replaces the snapshot's policy checks
//	hidden: ["go test ./..."]        # optional: run after hidden/ is laid over
//
// A run is solved when its change is one a worker would propose: the loop
// stops on green checks (finish accepted), the gate passes it, the checks
// pass again in a fresh sandbox, and the reproduction, when the policy
// requires one, proves it. Its hidden commands then run in a fresh network-less sandbox over the final
// tree, with hidden/ laid over it: the agent never saw those tests, so a
// change that only satisfies the visible ones fails them.
// Every sandbox's $HOME is a copy-on-write view of the image's seed of it
// (envcache.SeedHome), copied once per evaluation, so that builds start warm
// and no sandbox sees another's writes.
//
// Capture writes a task from a merged pull request read from GitHub: the
// tree it was merged onto, the issue it closed, the tests it added or
// changed as hidden tests, and a trajectory that replays it.
package eval

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	makechange "github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Config says how a suite is run.
type Config struct {
	Driver sandbox.Sandboxes
	// Model returns the model for one run of a task and what releases it:
	// the same client for every run, or a scripted model started afresh
	// from the task's trajectory.
	Model func(Task) (agent.Model, func(), error)
	// ModelName, when set, replaces every task's policy model.edit, with
	// TaskPlaceholder in it replaced by the task's name; DefaultModel names
	// the model of tasks whose policy names none.
	ModelName, DefaultModel string
	// Runs of each task; less than 1 means 1.
	Runs int
	// Parallel is how many runs, of any tasks, go at once; less than 1
	// means 1. Each run has its own tree, sandboxes and model, so only the
	// machine and the model endpoint bound it.
	Parallel int
	// Envs, when set, keeps the image's seed of $HOME for the next
	// evaluation, and for those going at once; without, each copies it.
	Envs *envcache.Cache
	// Done, when set, sees each run's result as it ends, one call at a
	// time, in the order the runs end.
	Done   func(Result)
	Logger *slog.Logger
}

// Hidden outcomes of a run.
const (
	HiddenPass    = "pass"
	HiddenFail    = "fail"
	HiddenNone    = "none"    // the task has no hidden tests
	HiddenSkipped = "skipped" // not solved, so not run
)

// Result is one run of one task.
type Result struct {
	Task   string `json:"task"`
	Run    int    `json:"run"`
	Model  string `json:"model"`
	Solved bool   `json:"solved"`
	// Stop is why the loop ended: a stop reason with its detail.
	Stop       string      `json:"stop"`
	Hidden     string      `json:"hidden"`
	HiddenRuns []HiddenRun `json:"hidden_runs,omitempty"`
	Iterations int         `json:"iterations"`
	Tokens     int64       `json:"tokens"`
	CostUSD    float64     `json:"cost_usd"`
	// Seconds is the change's wall clock: the base checks, the loop, the
	// verification and the reproduction.
	Seconds float64 `json:"seconds"`
	// Error is what ended the run other than a stop rule: a model error,
	// a sandbox failure.
	Error string `json:"error,omitempty"`
}

// HiddenRun is one hidden command's result.
type HiddenRun struct {
	Run      string `json:"run"`
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Passed   bool   `json:"passed"`
	// Output is the tail of stderr then stdout.
	Output string `json:"output,omitempty"`
}

// hiddenOutputLimit is how much of a hidden command's output a result keeps:
// a test runner's verdict is at the end.
const hiddenOutputLimit = 4 << 10

// Run runs every task of the suite cfg.Runs times, cfg.Parallel runs at a
// time, and reports them in the suite's task order and run order, however
// the runs interleave. A run that fails, for any reason, is a result; only
// a cancelled ctx or a task the configuration cannot run ends the
// evaluation early.
func Run(ctx context.Context, s *Suite, cfg Config) (*Report, error) {
	if cfg.Driver == nil || cfg.Model == nil {
		return nil, errors.New("eval: Driver and Model are required")
	}
	cfg.Runs = max(cfg.Runs, 1)
	cfg.Parallel = max(cfg.Parallel, 1)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, t := range s.Tasks {
		if cfg.model(t) == "" {
			return nil, fmt.Errorf("task %s: no model: set model.edit in %s or name one", t.Name, policy.PolicyPath)
		}
	}
	home, err := seedHome(ctx, cfg.Driver, cfg.Envs, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("eval: seed the sandboxes' home: %w", err)
	}
	defer func() {
		if err := home.close(); err != nil {
			cfg.Logger.Warn("remove the sandboxes' home", "err", err)
		}
	}()
	// Each run writes its own slot, so the report's order is the suite's
	// whatever the order the runs end in.
	results := make([]Result, len(s.Tasks)*cfg.Runs)
	slots := make(chan int, cfg.Parallel)
	var wg sync.WaitGroup
	var done sync.Mutex
	for i := range results {
		select {
		case slots <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r := cfg.attempt(ctx, home, s.Tasks[i/cfg.Runs], i%cfg.Runs+1)
			if ctx.Err() != nil {
				return
			}
			results[i] = r
			if cfg.Done != nil {
				done.Lock()
				defer done.Unlock()
				cfg.Done(r)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newReport(s, cfg.Runs, results), nil
}

// TaskPlaceholder in Config.ModelName stands for each task's name: a
// model per task, such as the trajectories a scripted endpoint serves.
const TaskPlaceholder = "{task}"

func (cfg *Config) model(t Task) string {
	switch {
	case cfg.ModelName != "":
		return strings.ReplaceAll(cfg.ModelName, TaskPlaceholder, t.Name)
	case t.Policy.Model.Edit != "":
		return t.Policy.Model.Edit
	}
	return cfg.DefaultModel
}

// attempt is one run of a task on a fresh copy of its snapshot: the
// change made as a worker makes it (change.Make: the base checks, the
// loop, the gate, the verification in a fresh sandbox and the
// reproduction, on the seed of $HOME), then, for a change to propose, the
// hidden tests.
func (cfg *Config) attempt(ctx context.Context, home *seededHome, t Task, run int) Result {
	r := Result{Task: t.Name, Run: run, Model: cfg.model(t), Hidden: HiddenSkipped}
	fail := func(err error) Result {
		r.Solved, r.Error = false, err.Error()
		return r
	}
	tmp, err := os.MkdirTemp("", "agentbot-eval-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	trees := workspace.NewManager(tmp, workspace.Options{Logger: cfg.Logger})
	defer trees.Close()
	tree, err := trees.Local(ctx, t.Repo())
	if err != nil {
		return fail(fmt.Errorf("copy the snapshot: %w", err))
	}
	defer tree.Close()
	model, release, err := cfg.Model(t)
	if err != nil {
		return fail(err)
	}
	defer release()

	policy := t.Policy
	policy.Model.Edit = r.Model
	id := runID(t.Name, run)
	start := time.Now()
	made, err := makechange.Make(ctx, makechange.Change{
		ID: id, Tree: tree, Policy: policy, Sandbox: cfg.Driver,
		// Every sandbox sees the seed of $HOME; the snapshot's setup is
		// not run.
		Env:   &makechange.Prepared{Env: home.env},
		Task:  prompts.TaskData{Repo: t.Name, Title: t.Title, Body: t.Body},
		Model: model, Log: cfg.Logger,
	})
	r.Seconds = time.Since(start).Seconds()
	if st := made.Loop; st != nil {
		r.Iterations, r.Tokens, r.CostUSD = st.Step, st.Usage.Total(), st.Usage.CostUSD
		r.Stop = stopText(st)
	}
	if err != nil {
		return fail(err)
	}
	r.Solved = made.Ended == nil
	if e := made.Ended; e != nil && e.Step != makechange.StepLoop {
		r.Stop = string(e.Step) + ": " + e.Reason
	}
	if !r.Solved {
		return r
	}
	if len(t.Hidden) == 0 {
		r.Hidden = HiddenNone
		return r
	}
	if r.HiddenRuns, err = cfg.hidden(ctx, home, t, id, tree); err != nil {
		r.Hidden = HiddenFail
		r.Error = fmt.Sprintf("hidden tests: %v", err)
		return r
	}
	r.Hidden = HiddenPass
	for _, h := range r.HiddenRuns {
		if !h.Passed {
			r.Hidden = HiddenFail
		}
	}
	return r
}

// hidden lays the hidden tests over the tree and runs the hidden commands,
// all of them, in a sandbox of their own: nothing the agent left running or
// wrote outside the tree can touch them.
func (cfg *Config) hidden(ctx context.Context, home *seededHome, t Task, id string, tree *workspace.Workspace) ([]HiddenRun, error) {
	if err := overlay(tree.Root(), t.HiddenFiles()); err != nil {
		return nil, fmt.Errorf("lay the hidden tests over the tree: %w", err)
	}
	p := t.Policy.Sandbox
	spec, err := home.Spec(sandbox.Spec{TaskID: id + "-hidden", WorkTree: tree.Dir(), CPUs: p.CPUs, Memory: p.Memory, Pids: p.Pids, MaxTreeGrowth: p.Disk})
	if err != nil {
		return nil, err
	}
	box, err := cfg.Driver.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("start the sandbox: %w", err)
	}
	defer func() {
		if err := box.Close(context.WithoutCancel(ctx)); err != nil {
			cfg.Logger.Warn("remove sandbox", "task", id, "err", err)
		}
	}()
	var runs []HiddenRun
	for _, c := range t.Hidden {
		res, err := box.Run(ctx, sandbox.Cmd{Shell: c, Timeout: DefaultCheckTimeout})
		if err != nil {
			return runs, fmt.Errorf("run %q: %w", c, err)
		}
		out := string(res.Stderr) + string(res.Stdout)
		out = tail(out, hiddenOutputLimit)
		runs = append(runs, HiddenRun{Run: c, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
			Passed: res.ExitCode == 0 && !res.TimedOut, Output: out})
	}
	return runs, nil
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// runID names a run's sandboxes: unique to this process, readable in
// docker ps.
func runID(task string, run int) string {
	return fmt.Sprintf("eval-%d-%s-%d", os.Getpid(), unsafeID.ReplaceAllString(task, "-"), run)
}

// stopText is why the loop ended, as a sentence fragment.
func stopText(st *agent.State) string {
	switch {
	case st.Stop != nil && st.Stop.Detail != "":
		return fmt.Sprintf("%s (%s)", st.Stop.Reason, strings.TrimSpace(st.Stop.Detail))
	case st.Stop != nil:
		return string(st.Stop.Reason)
	case st.Pending != nil:
		return fmt.Sprintf("%s awaits a human's approval, which an evaluation cannot give", st.Pending.Name)
	}
	return string(st.Status)
}

// tail keeps the last n bytes of s, cut at a character boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}
