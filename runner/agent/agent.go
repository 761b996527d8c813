// Package agent is the bounded loop that turns a task into a diff whose
// checks pass: it asks the model for the next step, runs the tool calls it
// makes through runner/tools, and stops for a reason it records.
//
// A step is one model answer and the tool calls it contains. The loop stops
// when finish is accepted (the checks pass), when the same check failure
// comes back after a correction, when the model repeats an identical call,
// when the model answers three times in a row without a tool call, when a
// budget runs out (iterations, wall clock, tokens, cost, or a budget
// Config.Budget checks, such as the operator's per period), or when an
// approver denies a call. Malformed calls, unknown tools and refused writes
// are results the model reads, never errors of the loop.
//
// The state is saved through a StateStore after the model's answer and after
// every tool result, so a worker that dies loses at most the call it was
// running: a new Agent on another worker, given a tree at the base commit,
// applies the saved diff and goes on from the first unanswered call with the
// same transcript.
//
// Messages are append-only, so that a provider's prompt cache keeps hitting,
// until the transcript nears the model's context window: then old, long tool
// results are replaced by digests from the fast model, once each.
package agent

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/tools"
)

// Model answers chat completions; *llm.Client satisfies it.
type Model interface {
	Complete(ctx context.Context, req llm.Request) (llm.Response, error)
}

// StateStore keeps a task's state between steps and across workers;
// queue.Store implements it on Redis. LoadState returns nil, nil when the task
// has no state yet.
type StateStore interface {
	SaveState(ctx context.Context, taskID string, state []byte) error
	LoadState(ctx context.Context, taskID string) ([]byte, error)
}

// Workspace is the task's work tree on the host; *workspace.Workspace
// satisfies it. Diff is the tree's diff against the base commit; Apply
// applies a saved diff to a tree at the base.
type Workspace interface {
	Root() *os.Root
	Diff(ctx context.Context) (string, error)
	Apply(ctx context.Context, diff string) error
}

// Config is what an Agent needs. System and Task are the rendered prompts
// (package prompts) that open a new transcript; a resumed task keeps its own.
type Config struct {
	TaskID string
	Policy policy.Policy
	Model  Model
	// Fast answers the digest requests; nil means Model. The model names
	// come from the policy either way.
	Fast      Model
	Runner    tools.Runner
	Workspace Workspace
	Store     StateStore
	System    string
	Task      string
	// Images go with the task message, for a model that reads images. The
	// saved transcript keeps their digests only: a resumed task is given
	// them again, and an image whose digest none of them has is no longer
	// sent.
	Images []llm.Image
	// ContextWindow is the edit model's window in tokens; zero means 128k.
	// Old tool results are digested when the transcript passes three
	// quarters of it.
	ContextWindow int
	// Observe, when set, is called after every tool call and every answer
	// without one, for progress lines, status updates and the trace. It
	// runs on the loop's goroutine: keep it quick.
	Observe func(Event)
	// ObserveModel, when set, is called after every chat completion the
	// loop asks for, answered or not, on the loop's goroutine.
	ObserveModel func(ModelCall)
	// ReadOnly runs the loop over the read tools and answer only, for a
	// question: nothing is written and nothing runs in a sandbox, so
	// Runner may be nil.
	ReadOnly bool
	// Review runs the loop over the read tools, report_finding and
	// finish_review, for a review; it implies ReadOnly.
	Review bool
	// Spent, when set, is what every loop sharing the policy's cost_usd
	// has spent so far, this one's included: the attempts of one task
	// share it, so that each stops once their sum reaches it. Nil: this
	// loop's own usage.
	Spent func() float64
	// Budget, when set, is asked before every step with the loop's usage
	// so far, earlier processes' included: a reason it returns stops the
	// loop with StopBudget. It is for budgets the loop does not own, such
	// as the operator's per period, which other tasks spend from too.
	Budget func(ctx context.Context, used llm.Usage) (reason string, err error)
	// Steer, when set, is asked before every step for the notes people
	// sent the task since (steer.go).
	Steer  Steer
	Logger *slog.Logger
}

// Event is one step's progress: a tool call and its result, or an answer
// without a tool call (Tool "").
type Event struct {
	Step        int
	Tool        string
	CallID      string // the call's id in the transcript, unique within the task
	Arguments   string // the call's raw arguments
	Target      string
	Outcome     tools.Outcome
	Result      string // what the model was told
	ResultBytes int
	Checks      []tools.CheckRun // the checks the call ran
	Took        time.Duration    // how long the call ran
	Tokens      int64            // sent and received so far
	Elapsed     time.Duration
}

// ModelCall is one chat completion: the edit model's next step, or the
// fast model's digest of an old result.
type ModelCall struct {
	Step   int // the step the completion is for
	Model  string
	Digest bool // a digest, not a step
	Usage  llm.Usage
	Took   time.Duration
	Err    error // why it failed; the loop returns it
}

// Agent runs one task's loop.
type Agent struct {
	cfg      Config
	st       *State
	tools    *tools.Set
	log      *slog.Logger
	started  time.Time     // when this process took the task up
	before   time.Duration // wall clock spent by earlier processes
	approved string        // the id of the call an approver just approved
}

// New loads the task's saved state, or starts a transcript from the prompts,
// and brings the work tree to the saved diff. The tree must be at the base
// commit or already carry exactly the saved diff.
func New(ctx context.Context, cfg Config) (*Agent, error) {
	cfg.ReadOnly = cfg.ReadOnly || cfg.Review
	if cfg.Model == nil || (cfg.Runner == nil && !cfg.ReadOnly) || cfg.Workspace == nil || cfg.Store == nil || cfg.TaskID == "" {
		return nil, errors.New("agent: TaskID, Model, Runner, Workspace and Store are required")
	}
	if cfg.Fast == nil {
		cfg.Fast = cfg.Model
	}
	if cfg.ContextWindow <= 0 {
		cfg.ContextWindow = 128_000
	}
	a := &Agent{cfg: cfg, log: cfg.Logger, started: time.Now()}
	if a.log == nil {
		a.log = slog.Default()
	}
	a.log = a.log.With("task", cfg.TaskID)
	raw, err := cfg.Store.LoadState(ctx, cfg.TaskID)
	if err != nil {
		return nil, fmt.Errorf("load state of task %s: %w", cfg.TaskID, err)
	}
	if raw == nil {
		a.st = &State{TaskID: cfg.TaskID, Status: app.StateRunning, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: cfg.System},
			{Role: llm.RoleUser, Content: cfg.Task, Images: cfg.Images},
		}}
	} else {
		a.st = &State{}
		if err := json.Unmarshal(raw, a.st); err != nil {
			return nil, fmt.Errorf("decode state of task %s: %w", cfg.TaskID, err)
		}
		if err := a.restoreTree(ctx); err != nil {
			return nil, err
		}
	}
	a.before = a.st.Elapsed
	a.tools, err = tools.New(tools.Config{Root: cfg.Workspace.Root(), Policy: cfg.Policy, Runner: cfg.Runner, Originals: a.st.Originals, ReadOnly: cfg.ReadOnly, Review: cfg.Review})
	if err != nil {
		return nil, fmt.Errorf("tools of task %s: %w", cfg.TaskID, err)
	}
	return a, nil
}

// restoreTree brings a tree at the base commit to the saved diff.
func (a *Agent) restoreTree(ctx context.Context) error {
	cur, err := a.cfg.Workspace.Diff(ctx)
	if err != nil {
		return fmt.Errorf("diff the work tree: %w", err)
	}
	switch {
	case cur == a.st.Diff:
		return nil
	case cur == "":
		if err := a.cfg.Workspace.Apply(ctx, a.st.Diff); err != nil {
			return fmt.Errorf("apply the saved diff of task %s: %w", a.st.TaskID, err)
		}
		return nil
	}
	return fmt.Errorf("resume task %s: the work tree has changes that are not the saved diff", a.st.TaskID)
}

// State returns the task's current state. The caller must not change it.
func (a *Agent) State() *State { return a.st }

// Run drives the loop until the task stops, pauses for approval, or ctx ends.
// A final or paused state is returned as is; an error leaves the saved state
// ready to resume.
func (a *Agent) Run(ctx context.Context) (*State, error) {
	if a.st.Status != app.StateRunning {
		return a.st, nil
	}
	for {
		if err := a.answerCalls(ctx); err != nil {
			return a.st, err
		}
		if a.st.Status != app.StateRunning {
			return a.st, nil
		}
		if reason, detail := a.overBudget(); reason != "" {
			return a.st, a.stop(ctx, reason, detail)
		}
		if stopped, err := a.checkBudget(ctx); stopped || err != nil {
			return a.st, err
		}
		if err := a.digest(ctx); err != nil {
			return a.st, err
		}
		if err := a.steer(ctx); err != nil {
			return a.st, err
		}
		if err := a.ask(ctx); err != nil {
			if reason, detail := a.overBudget(); reason == StopWallClock {
				return a.st, a.stop(ctx, reason, detail)
			}
			return a.st, err
		}
	}
}

// Decide resumes a task paused on a call that needs a human: an approved
// call runs; a denied one is answered with the denial, which the model
// reads like any refusal, and the loop goes on without it.
func (a *Agent) Decide(ctx context.Context, approve bool, by string) (*State, error) {
	p := a.st.Pending
	if a.st.Status != app.StateAwaitingApproval || p == nil {
		return a.st, app.Errorf(app.EConflict, "task %s is not awaiting approval", a.st.TaskID)
	}
	a.st.Approvals = append(a.st.Approvals, Approval{CallID: p.ID, Tool: p.Name, Arguments: p.Arguments, By: by, Approved: approve})
	a.st.Pending = nil
	a.st.Status = app.StateRunning
	if !approve {
		a.st.Messages = append(a.st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: p.ID,
			Content: fmt.Sprintf("%s refused: @%s, an approver, denied this call, so it was not run. Go on without it, or finish if the task cannot be done without it.", p.Name, by)})
		if err := a.save(ctx); err != nil {
			return a.st, err
		}
	} else {
		a.approved = p.ID
	}
	return a.Run(ctx)
}

// withImages returns msgs with their images' bytes, from cfg.Images by
// digest, since the transcript holds digests only; an image the task was
// not given is left out, with a warning.
func (a *Agent) withImages(msgs []llm.Message) []llm.Message {
	var out []llm.Message
	for i, m := range msgs {
		if len(m.Images) == 0 {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		var ims []llm.Image
		for _, im := range m.Images {
			k := slices.IndexFunc(a.cfg.Images, func(g llm.Image) bool { return g.Digest == im.Digest })
			if k < 0 {
				a.log.Warn("an image of the transcript is no longer available; the model is not sent it", "digest", im.Digest)
				continue
			}
			ims = append(ims, a.cfg.Images[k])
		}
		out[i].Images = ims
	}
	if out == nil {
		return msgs
	}
	return out
}

// ask sends the transcript to the edit model and records its answer.
func (a *Agent) ask(ctx context.Context) error {
	callCtx := ctx
	if wc := a.cfg.Policy.Limits.WallClock; wc > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, wc-a.elapsed())
		defer cancel()
	}
	req := llm.Request{Model: a.cfg.Policy.Model.Edit, Messages: a.withImages(a.st.Messages), Tools: a.tools.Defs(), Temperature: a.cfg.Policy.Model.Temperature}
	start := time.Now()
	resp, err := a.cfg.Model.Complete(callCtx, req)
	a.observeModel(ModelCall{Step: a.st.Step + 1, Model: cmp.Or(resp.Model, req.Model), Usage: resp.Usage, Took: time.Since(start), Err: err})
	if err != nil {
		return fmt.Errorf("step %d of task %s: ask the model: %w", a.st.Step+1, a.st.TaskID, err)
	}
	a.st.Step++
	a.st.Usage = a.st.Usage.Add(resp.Usage)
	msg := resp.Message
	msg.Role = llm.RoleAssistant
	// Results are matched to calls by id, and some local servers send none
	// or repeat them: give such calls an id of our own.
	seen := map[string]bool{}
	for i := range msg.ToolCalls {
		if c := &msg.ToolCalls[i]; c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("agentbot_%d_%d", a.st.Step, i)
		}
		seen[msg.ToolCalls[i].ID] = true
	}
	a.st.Messages = append(a.st.Messages, msg)
	if msg.Content != "" {
		a.st.Plan = msg.Content
	}
	if len(msg.ToolCalls) > 0 {
		a.st.TextOnly = 0
		return a.save(ctx)
	}
	a.st.TextOnly++
	a.emit(Event{Step: a.st.Step})
	if a.st.TextOnly >= textOnlyAnswers {
		return a.stop(ctx, StopTextOnly, fmt.Sprintf("the model answered %d times in a row with text and no tool call", a.st.TextOnly))
	}
	a.st.Messages = append(a.st.Messages, llm.Message{Role: llm.RoleUser, Content: a.nudge()})
	return a.save(ctx)
}

// textOnlyAnswers is how many answers in a row without a tool call end
// the loop: a model that keeps writing prose after being nudged twice
// would spend the rest of the budget the same way.
const textOnlyAnswers = 3

// nudge answers a reply without a tool call: the loop only advances through
// tools, and finish (answer, for a question) is how the model says it is
// done.
func (a *Agent) nudge() string {
	if a.cfg.Review {
		return "Continue with a tool call. Report each finding with report_finding, then call finish_review."
	}
	if a.cfg.ReadOnly {
		return "Continue with a tool call. When you can answer the question, call answer with your reply."
	}
	return "Continue with a tool call. When the checks pass and the task is complete, call finish with a summary."
}

// answerCalls runs the calls of the last answer that have no result yet: all
// of them after a fresh answer, the rest of them after a restart.
func (a *Agent) answerCalls(ctx context.Context) error {
	for _, call := range a.unanswered() {
		if a.tools.Approval(call.Name) == policy.ApprovalHuman && a.approved != call.ID {
			c := call
			a.st.Pending = &c
			a.st.Status = app.StateAwaitingApproval
			a.log.Info("tool call awaits approval", "tool", call.Name, "call", call.ID)
			return a.save(ctx)
		}
		start := time.Now()
		res := a.tools.Call(ctx, call.Name, call.Arguments)
		took := time.Since(start)
		if err := ctx.Err(); err != nil {
			// Cut short by the worker's shutdown: not a result the model
			// should see; the call runs again on resume.
			return fmt.Errorf("step %d of task %s: %s: %w", a.st.Step, a.st.TaskID, call.Name, err)
		}
		if err := a.record(ctx, call, res, took); err != nil {
			return err
		}
		if a.st.Status != app.StateRunning {
			return nil
		}
	}
	return nil
}

// unanswered returns the calls of the last assistant message that no tool
// message answers.
func (a *Agent) unanswered() []llm.ToolCall {
	msgs := a.st.Messages
	last := len(msgs) - 1
	for last >= 0 && msgs[last].Role == llm.RoleTool {
		last--
	}
	if last < 0 || msgs[last].Role != llm.RoleAssistant {
		return nil
	}
	answered := map[string]bool{}
	for _, m := range msgs[last+1:] {
		answered[m.ToolCallID] = true
	}
	var out []llm.ToolCall
	for _, c := range msgs[last].ToolCalls {
		if !answered[c.ID] {
			out = append(out, c)
		}
	}
	return out
}

// record appends a call's result, updates the counters, the diff and the
// stop rules, and saves.
func (a *Agent) record(ctx context.Context, call llm.ToolCall, res tools.Result, took time.Duration) error {
	st := a.st
	if res.Changed {
		// What the tree holds may be beyond recording (a FIFO, a huge or
		// oddly named file a command left): the model reads why and can
		// remove it, and the saved diff stays the last one recorded. The
		// gate refuses the same tree if it is still there at the end.
		diff, err := a.cfg.Workspace.Diff(ctx)
		switch _, refused := errors.AsType[*app.Error](err); {
		case refused:
			res.Output += "\n\nRefused by the host: " + app.ErrorMessage(err)
		case err != nil:
			return fmt.Errorf("step %d of task %s: diff after %s: %w", st.Step, st.TaskID, call.Name, err)
		default:
			st.Diff = diff
			st.Originals = a.tools.Originals()
			st.Touched = a.tools.Touched()
			st.Corrected = true
		}
	}
	st.Messages = append(st.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: res.Output})
	st.Counts.ToolCalls++
	switch res.Outcome {
	case tools.Invalid:
		st.Counts.InvalidCalls++
	case tools.BlockedWrite:
		st.Counts.BlockedWrites++
		a.log.Warn("write refused by policy", "tool", call.Name, "target", res.Target)
	case tools.BlockedCommand:
		st.Counts.BlockedCommands++
		a.log.Warn("command refused by policy", "target", res.Target)
	}
	st.Checks = append(st.Checks, res.Checks...)
	a.emit(Event{Step: st.Step, Tool: call.Name, CallID: call.ID, Arguments: call.Arguments, Target: res.Target,
		Outcome: res.Outcome, Result: res.Output, ResultBytes: len(res.Output), Checks: res.Checks, Took: took})

	if res.Done {
		st.Summary, st.Title = res.Summary, res.Title
		return a.stop(ctx, StopDone, res.Output)
	}
	if reason, detail := a.afterChecks(res.Checks); reason != "" {
		return a.stop(ctx, reason, detail)
	}
	if a.repeated(call, res) {
		return a.stop(ctx, StopLoop, fmt.Sprintf("%s was called %d times with the same arguments and result", call.Name, loopRepeats))
	}
	return a.save(ctx)
}

// afterChecks applies the one-correction-per-failure rule: a failure whose
// signature comes back after the tree changed stops the task.
func (a *Agent) afterChecks(runs []tools.CheckRun) (StopReason, string) {
	if len(runs) == 0 {
		return "", ""
	}
	last := runs[len(runs)-1]
	if last.Passed {
		a.st.LastFailure = ""
		return "", ""
	}
	if last.Signature == a.st.LastFailure && a.st.Corrected {
		return StopSameFailure, fmt.Sprintf("check %s failed the same way after a correction", last.Name)
	}
	a.st.LastFailure, a.st.Corrected = last.Signature, false
	return "", ""
}

// Loop detection, after crush's: the same call with the same result this
// many times within the window means the model is going round in circles.
const (
	loopWindow  = 10
	loopRepeats = 3
)

func (a *Agent) repeated(call llm.ToolCall, res tools.Result) bool {
	h := sha256.Sum256([]byte(call.Name + "\x00" + call.Arguments + "\x00" + res.Output))
	sig := hex.EncodeToString(h[:8])
	a.st.Recent = append(a.st.Recent, sig)
	if len(a.st.Recent) > loopWindow {
		a.st.Recent = a.st.Recent[len(a.st.Recent)-loopWindow:]
	}
	n := 0
	for _, s := range a.st.Recent {
		if s == sig {
			n++
		}
	}
	return n >= loopRepeats
}

// overBudget returns the budget that has run out, if any.
func (a *Agent) overBudget() (StopReason, string) {
	l, st := a.cfg.Policy.Limits, a.st
	switch {
	case l.Iterations > 0 && st.Step >= l.Iterations:
		return StopIterations, fmt.Sprintf("%d steps taken, the limit is %d", st.Step, l.Iterations)
	case l.WallClock > 0 && a.elapsed() >= l.WallClock:
		return StopWallClock, fmt.Sprintf("%s spent, the limit is %s", a.elapsed().Round(time.Second), l.WallClock)
	case l.Tokens > 0 && st.Usage.Total() >= l.Tokens:
		return StopTokens, fmt.Sprintf("%d tokens used, the limit is %d", st.Usage.Total(), l.Tokens)
	case l.CostUSD > 0 && a.spent() >= l.CostUSD:
		return StopCost, fmt.Sprintf("$%.2f spent, the limit is $%.2f", a.spent(), l.CostUSD)
	}
	return "", ""
}

// checkBudget asks Config.Budget, if set, and stops the loop when it
// gives a reason.
func (a *Agent) checkBudget(ctx context.Context) (stopped bool, err error) {
	if a.cfg.Budget == nil {
		return false, nil
	}
	reason, err := a.cfg.Budget(ctx, a.st.Usage)
	if err != nil {
		return false, fmt.Errorf("step %d of task %s: check the budgets: %w", a.st.Step+1, a.st.TaskID, err)
	}
	if reason == "" {
		return false, nil
	}
	return true, a.stop(ctx, StopBudget, reason)
}

// spent is the cost that counts against the policy's cost_usd.
func (a *Agent) spent() float64 {
	if a.cfg.Spent != nil {
		return a.cfg.Spent()
	}
	return a.st.Usage.CostUSD
}

func (a *Agent) elapsed() time.Duration { return a.before + time.Since(a.started) }

// stop ends the task with a reason and saves it.
func (a *Agent) stop(ctx context.Context, reason StopReason, detail string) error {
	a.st.Stop = &Stop{Reason: reason, Detail: detail}
	a.st.Status = reason.state()
	a.log.Info("task stopped", "reason", reason, "detail", detail, "steps", a.st.Step, "tokens", a.st.Usage.Total())
	return a.save(ctx)
}

func (a *Agent) emit(e Event) {
	if a.cfg.Observe == nil {
		return
	}
	e.Tokens = a.st.Usage.Total()
	e.Elapsed = a.elapsed()
	a.cfg.Observe(e)
}

func (a *Agent) observeModel(c ModelCall) {
	if a.cfg.ObserveModel != nil {
		a.cfg.ObserveModel(c)
	}
}

func (a *Agent) save(ctx context.Context) error {
	a.st.Elapsed = a.elapsed()
	raw, err := json.Marshal(a.st)
	if err != nil {
		return fmt.Errorf("encode state of task %s: %w", a.st.TaskID, err)
	}
	// The save must land even when ctx was cancelled under it: a step
	// taken and not saved would be taken again.
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := a.cfg.Store.SaveState(saveCtx, a.st.TaskID, raw); err != nil {
		return fmt.Errorf("save state of task %s at step %d: %w", a.st.TaskID, a.st.Step, err)
	}
	return nil
}
