// Package runner runs one queued task from start to finish. A Runner is
// the queue's Handler; cmd/agentbot hands it the queue's store, the GitHub
// App as GitHub (runner/githubapp adapts it), the Docker driver as
// sandbox.Sandboxes, the workspace manager and the model, each behind an
// interface (github.go, Workspaces, and runner/sandbox's contract), and the
// runner imports neither the queue, the webhook, a GitHub client nor Docker.
//
// A fix (also a retry, a follow-up on a review and a fix of failing CI)
// reads as its steps, each a method found by its name:
//
//   - ProcessTask (runner.go) loads the saved progress and dispatches on
//     the verb; fix (fix.go) is the fix's path;
//   - admission: admit (runner.go) loads the policy from the default
//     branch and decides who may ask; prepare (fix.go) adds the definition
//     of done and the target branch; hold (lock.go) keeps one task per issue;
//     followUp (followup.go) reads a review or failing CI;
//   - workspace (fix.go): the checkout on the host;
//   - the change (making.go): change.Make runs setup, base checks, the
//     loop (under limits.attempts, several side by side, the best
//     proposed), the gate, the verification and the reproduction; the
//     worker gives it the environment, the attempts' checkouts and the
//     loop's hooks (store, approvals, stop, notes, budgets), and the
//     reporter's changed hears of each step as Make tells it;
//   - then conclude (fix.go): what the change came to — propose and
//     pushChange (push.go pushes), pullRequest, or a pause, or the
//     report of why there is none;
//   - report: the task's reporter (reporter.go) owns every write a task
//     makes about itself — status comment, check run, reactions, thread
//     replies, state, audit log, trace, outcome and saved progress; the
//     texts it shows are in report.go.
//
// At-least-once delivery means every step may run twice, on the same worker
// or on another one after a crash, so each step either looks before it
// creates or can be repeated harmlessly:
//
//   - the status comment is found again by its task marker, the pull request
//     by its head branch, and reactions are idempotent on GitHub's side;
//   - the branch name is derived from the issue, and the push has a lease;
//   - the runner's own progress (the base commit, the check run's id, the
//     pushed commit, the pull request, the audit entries written) is saved
//     in the store beside the loop's state, so a resumed task works from the
//     same commit, completes the same check run, writes no audit entry twice
//     and never opens a second pull request.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/workspace"
)

// Store keeps tasks' records and what a task's workers share; queue.Store
// satisfies it.
type Store interface {
	agent.StateStore
	// SetState records where task id is, for "agentbot tasks" and
	// "/agent status"; step says what it is doing.
	SetState(ctx context.Context, id string, st app.State, step string) error
	// SaveProgress and LoadProgress keep the runner's own progress on a
	// task (nil, nil when there is none).
	SaveProgress(ctx context.Context, id string, progress []byte) error
	LoadProgress(ctx context.Context, id string) ([]byte, error)
	// RequestStop asks the running task id to stop on behalf of login;
	// StopRequested returns who did, "" while nobody did.
	RequestStop(ctx context.Context, id, login string) error
	StopRequested(ctx context.Context, id string) (login string, err error)
	// RecordDecision and Decision keep an approver's decision on the
	// call the paused task id waits on (nil, nil when there is none).
	RecordDecision(ctx context.Context, id string, decision []byte) error
	Decision(ctx context.Context, id string) ([]byte, error)
	// ClaimRefusal reports whether task id may answer login a refusal on
	// repo#number: once per issue and sender within a window, so that
	// comments by people who may not command cannot make agentbot post
	// at will.
	ClaimRefusal(ctx context.Context, repo string, number int, login, id string) (bool, error)
}

// Tasks finds the tasks asked on one issue or pull request, for "/agent
// status"; cmd/agentbot adapts queue.Store.
type Tasks interface {
	OnIssue(ctx context.Context, repo string, number int) ([]TaskState, error)
}

// TaskState is one task as asked, and where it is.
type TaskState struct {
	app.Task
	State app.State
	Step  string
}

// Pulls keeps what is known of agentbot's own pull requests beyond any
// one task; queue.Store satisfies it.
type Pulls interface {
	// SavePull keeps who asked for the task that opened a pull request;
	// Pull returns it, ok false when nothing is kept.
	SavePull(ctx context.Context, p app.AgentPull) error
	Pull(ctx context.Context, repo string, number int) (p app.AgentPull, ok bool, err error)
	// CIAnswers are how failing checks on the pull request's heads were
	// answered. AnswerCI records answers unless their check on their
	// head was answered before, and returns the answer that stands for
	// each.
	CIAnswers(ctx context.Context, repo string, number int) ([]app.CIAnswer, error)
	AnswerCI(ctx context.Context, repo string, number int, answers []app.CIAnswer) ([]app.CIAnswer, error)
}

// Outcomes records finished tasks' outcomes.
type Outcomes interface {
	Save(ctx context.Context, o app.TaskOutcome) error
}

// Workspaces checks a task's repository out on the host;
// *workspace.Manager satisfies it.
type Workspaces interface {
	Checkout(ctx context.Context, opts workspace.CheckoutOptions) (*workspace.Workspace, error)
}

// Config is what a Runner needs. Fast, Models, Outcomes and Logger are
// optional.
type Config struct {
	GitHub     GitHub
	Server     policy.ServerConfig
	Workspaces Workspaces
	Sandbox    sandbox.Sandboxes
	// SetupSecrets holds the private registries' credentials that the
	// server config names by variable (setup.registries' credentials.env):
	// the worker's environment, as its command line read it. Nil: none.
	SetupSecrets func(name string) string
	// SetupCABundle, when set, is a PEM file the setup container trusts
	// (--setup-ca-file, with the public roots): for networks whose egress
	// re-signs TLS.
	SetupCABundle string
	Model         agent.Model
	Fast          agent.Model // digests old context; nil means Model
	// Models name the models of a policy that names none.
	Models policy.Models
	Store  Store
	// Tasks finds an issue's tasks for status, retry, stop, approve and
	// deny.
	Tasks Tasks
	// Locks keep one task at a time on an issue or pull request.
	Locks Locks
	// Pulls keeps who asked for each pull request agentbot opened, and
	// how failing CI on each was answered.
	Pulls Pulls
	// Outcomes, when set, keeps what became of each finished fix, for
	// "agentbot stats" and the metrics; queue.Outcomes satisfies it.
	Outcomes Outcomes
	// Audit, when set, receives the audit log's entries: each command,
	// admission, approval, refused call, push, pull request and policy
	// error; queue.Audit satisfies it.
	Audit AuditLog
	// Traces, when set, keeps each fix's trace, which its check run
	// shows; queue.Traces satisfies it.
	Traces TraceLog
	// Pages, when set, links each task's live page from its status
	// comment.
	Pages TaskPages
	// Bot is the commits' author: the App's bot identity.
	Bot    workspace.Signature
	Logger *slog.Logger
	// Notes, when set, keeps the notes of "/agent note", which the loop
	// reads at its next step (note.go); queue.Store satisfies it.
	Notes Notes
	// History, when set, reads finished tasks' outcomes for a plan's cost
	// estimate (plan.go); queue.Outcomes satisfies it.
	History History
	// Envs, when set, keeps the prepared environments setup builds, which
	// the agent phase sees copy-on-write; without it, setup runs in the
	// task's tree and only what it writes there reaches the agent.
	Envs *envcache.Cache
	// Budgets, when set, counts what tasks spend against Server.Budgets
	// (budget.go); queue.Budgets satisfies it. Now is the clock of their
	// periods, time.Now when nil.
	Budgets Budgets
	Now     func() time.Time
}

// Runner handles queued tasks; it satisfies queue.Handler.
type Runner struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and returns a Runner.
func New(cfg Config) (*Runner, error) {
	if cfg.GitHub == nil || cfg.Workspaces == nil || cfg.Sandbox == nil || cfg.Model == nil || cfg.Store == nil || cfg.Tasks == nil || cfg.Locks == nil || cfg.Pulls == nil {
		return nil, errors.New("runner: GitHub, Workspaces, Sandbox, Model, Store, Tasks, Locks and Pulls are required")
	}
	if cfg.Bot.Name == "" || cfg.Bot.Email == "" {
		return nil, errors.New("runner: the bot's commit identity is required")
	}
	if cfg.Fast == nil {
		cfg.Fast = cfg.Model
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Runner{cfg: cfg, log: log}, nil
}

// progress is the runner's own resumable state, saved beside the loop's.
type progress struct {
	Base       string           `json:"base,omitempty"` // the commit the task works from
	Branch     string           `json:"branch,omitempty"`
	CheckRunID int64            `json:"check_run_id,omitempty"`
	Pushed     string           `json:"pushed,omitempty"` // the commit pushed to Branch
	PR         *app.PullRequest `json:"pr,omitempty"`
	// Audited marks the audit entries written, so that a task run again
	// writes none of them twice.
	Audited []string `json:"audited,omitempty"`
	// CommitDate is the date of the commit to push, kept before it is
	// made so that the commit made again after a crash is the same one.
	CommitDate time.Time `json:"commit_date,omitzero"`
	// Waiting is the task this one last said it waits behind.
	Waiting string `json:"waiting,omitempty"`
	// Resumes is the paused task an approval or denial resumes.
	Resumes string `json:"resumes,omitempty"`
	// Replied is set once the result is answered in the review thread
	// the command came from.
	Replied bool      `json:"replied,omitempty"`
	Final   app.State `json:"final,omitempty"` // set once the task's report is complete

	// BaseChecks are the checks' run on the base commit before the loop:
	// the proof of a change that touches no test, when one failed there.
	BaseChecks *Verification `json:"base_checks,omitempty"`
	// Verified is the final verification of the tree pushed, which the
	// reports show once it is pushed.
	Verified *Verification `json:"verified,omitempty"`
	// Reproduction is the proof that the tree pushed fixes something, or
	// why there is none; nil when the policy asks for none.
	Reproduction *Reproduction `json:"reproduction,omitempty"`
	// Attempts are what became of the attempts of limits.attempts and
	// which one is proposed; nil for a task of one attempt.
	Attempts *text.Attempts `json:"attempts,omitempty"`
	// Plan is the plan written before the change, when the policy asks
	// for one (plan.go).
	Plan *plan `json:"plan,omitempty"`
	// Review is a review's findings and their proofs (review.go).
	Review *reviewProgress `json:"review,omitempty"`
}

func (r *Runner) loadProgress(ctx context.Context, id string) (progress, error) {
	var p progress
	raw, err := r.cfg.Store.LoadProgress(ctx, id)
	if err != nil || raw == nil {
		return p, err
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Errorf("decode progress of task %s: %w", id, err)
	}
	return p, nil
}

// task is one task being run: what it was asked, where, the handles on
// GitHub it reports through and its saved progress. What it has come to
// so far is its reporter's (account).
type task struct {
	*app.Task
	inst   Installation
	policy policy.LoadedPolicy
	issue  app.IssueInfo
	status StatusComment
	rep    *reporter // every write about the task goes through it
	prog   progress
	log    *slog.Logger
}

// ProcessTask runs t to its end. An error means the task should be tried
// again (GitHub or Docker failed on the way); everything the user must
// hear about — refusals, failed checks, budgets — is reported on GitHub and
// returns nil.
func (r *Runner) ProcessTask(ctx context.Context, t app.Task) error {
	log := r.log.With("task", t.ID, "delivery", t.Delivery, "repo", t.Repo, "number", t.Number, "verb", t.Verb)
	prog, err := r.loadProgress(ctx, t.ID)
	if err != nil {
		return err
	}
	if prog.Final != "" {
		log.Info("task already reported", "state", prog.Final)
		return nil
	}
	inst, err := r.cfg.GitHub.Installation(t.InstallationID, t.Repo)
	if err != nil {
		return err
	}
	tk := &task{Task: &t, inst: inst, prog: prog, log: log, status: linkPage(inst.StatusComment(t.Repo, t.Number, t.ID), r.cfg.Pages, t)}
	tk.rep = r.reporter(tk)
	if err := tk.rep.received(ctx); err != nil {
		return err
	}
	switch t.Verb {
	case app.VerbFix, app.VerbFixCI:
		err = r.fix(ctx, tk)
	case app.VerbHelp:
		err = r.help(ctx, tk)
	case app.VerbStatus:
		err = r.status(ctx, tk)
	case app.VerbRetry:
		err = r.retry(ctx, tk)
	case app.VerbStop:
		err = r.stop(ctx, tk)
	case app.VerbNote:
		err = r.note(ctx, tk)
	case app.VerbApprove, app.VerbDeny:
		err = r.decide(ctx, tk)
	case app.VerbAsk, app.VerbExplain:
		err = r.ask(ctx, tk)
	case app.VerbReview:
		err = r.review(ctx, tk)
	case app.VerbSetup:
		err = r.setupVerb(ctx, tk)
	default:
		err = r.unavailable(ctx, tk)
	}
	// A task that ended before its change says so once, here or, for a
	// task that held its issue, where it held it (held).
	err = tk.rep.ended(ctx, err)
	if w, ok := errors.AsType[*waiting](err); ok {
		log.Info("waiting behind another task on the issue", "behind", w.behind)
	} else if err != nil {
		log.Error("task failed; it will be tried again", "err", err)
	}
	return err
}

// admit loads the policy from the default branch and decides whether the
// requester may run the task; a refusal is an *ended.
func (r *Runner) admit(ctx context.Context, tk *task) error {
	if err := r.cfg.Server.AllowsRepo(tk.Repo); err != nil {
		return refused(err)
	}
	var err error
	if tk.policy, err = tk.inst.LoadPolicy(ctx, tk.Repo, r.cfg.Server); err != nil {
		if _, user := errors.AsType[*app.Error](err); user {
			if tk.Label != "" && !r.defaultLabel(tk.Label) {
				// Any label may have been added; only the trigger's
				// deserves an answer, and this one cannot be known.
				return ignored(fmt.Sprintf("label %q, and the policy cannot be read: %v", tk.Label, err))
			}
			if err := tk.rep.audit(ctx, app.AuditPolicyError, app.ErrorMessage(err)); err != nil {
				return err
			}
			return refused(err)
		}
		return err
	}
	if tk.Label != "" && !strings.EqualFold(tk.Label, tk.policy.Policy.Trigger.Label) {
		return ignored(fmt.Sprintf("label %q is not the trigger label", tk.Label))
	}
	if tk.issue, err = tk.inst.Issue(ctx, tk.Repo, tk.Number); err != nil {
		return err
	}
	inv := app.Invocation{Repo: tk.Repo, Verb: tk.Verb, Text: commandText(tk.policy.Policy, tk.Task)}
	if tk.issue.Pull != nil {
		inv.FromFork = tk.issue.Pull.HeadRepo != tk.Repo
	}
	authz := policy.NewAuthorizer(tk.inst, tk.policy.Policy)
	d, err := r.authorize(ctx, tk, authz, inv)
	if err != nil {
		return err
	}
	if !d.Allowed {
		return r.deny(ctx, tk, authz, inv, d.Reason)
	}
	if err := r.admitBudgets(ctx, tk); err != nil {
		return err
	}
	tk.log.Info("admitted", "reason", d.Reason, "policy", tk.policy.Policy.Source)
	return tk.rep.admission(ctx, true, d.Reason)
}

// commandText is the command as the requester wrote it, near enough to be
// quoted back: the trigger, and the instructions or the verb.
func commandText(p policy.Policy, t *app.Task) string {
	trigger := p.Trigger.Command
	if trigger == "" {
		trigger = app.DefaultCommand
	}
	switch {
	case t.Verb == app.VerbFix && t.Instructions != "":
		return trigger + " " + text.FirstLine(t.Instructions)
	case t.Verb.ReadOnly() && t.Instructions != "":
		return trigger + " " + string(t.Verb) + " " + text.FirstLine(t.Instructions)
	}
	return trigger + " " + string(t.Verb)
}

// defaultLabel reports whether label is the trigger label of a
// repository whose policy sets none: the operator's, or the built-in one.
func (r *Runner) defaultLabel(label string) bool {
	p, err := policy.BuildPolicy(r.cfg.Server)
	return err == nil && strings.EqualFold(label, p.Trigger.Label)
}

// help answers "/agent help" with the grammar and the repository's
// policy, to those who may command.
func (r *Runner) help(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	return finished(app.StateSucceeded, text.Help(tk.policy.Policy), "")
}

// statusTasks bounds the tasks "/agent status" lists: an issue may hold
// many, and a status comment has a size limit.
const statusTasks = 20

// status answers "/agent status" with where the issue's tasks are, newest
// first, to those who may command.
func (r *Runner) status(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	var listed []text.Listed
	older := 0
	for _, t := range all {
		if t.ID == tk.ID || t.Verb == app.VerbStatus || t.Verb == app.VerbHelp || (t.Label != "" && t.State == app.StateRefused) {
			continue
		}
		if len(listed) == statusTasks {
			older++
			continue
		}
		listed = append(listed, text.Listed{ID: t.ID, Verb: t.Verb, Requester: t.Requester, State: t.State, Step: t.Step})
	}
	return finished(app.StateSucceeded, text.Status(tk.Number, listed, older), "")
}

// retry answers "/agent retry" by running the issue's last failed fix
// again, from scratch, as this task.
func (r *Runner) retry(ctx context.Context, tk *task) error {
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	for _, t := range all {
		switch {
		case t.Verb != app.VerbFix || t.ID == tk.ID:
			continue
		case t.State == app.StateFailed || t.State == app.StateStopped:
			tk.Instructions = retryInstructions(t.Instructions, tk.Instructions)
			tk.log.Info("retrying", "failed", t.ID)
			return r.fix(ctx, tk)
		}
		break // the latest fix did not fail: nothing to retry
	}
	return finished(app.StateRefused, text.NoRetry(tk.Number), "")
}

// stop answers "/agent stop" by asking the issue's running fix to stop.
func (r *Runner) stop(ctx context.Context, tk *task) error {
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return err
	}
	for _, t := range all {
		if t.ID == tk.ID || t.State.Final() || (t.Verb != app.VerbFix && t.Verb != app.VerbRetry && t.Verb != app.VerbFixCI) {
			continue
		}
		if err := r.cfg.Store.RequestStop(ctx, t.ID, tk.Requester); err != nil {
			return err
		}
		return finished(app.StateSucceeded, text.Stopping(t.ID), "")
	}
	return finished(app.StateRefused, text.NothingRunning(tk.Number), "")
}

// renderPrompts renders the system prompt and the task message, with f
// what a follow-up addresses; th is the conversation the model may read.
func renderPrompts(tk *task, f *followUp, ws *workspace.Workspace, th *app.Thread) (system, task string, err error) {
	return change.Prompts(ws.Root().FS(), tk.policy.Policy, reproduceMode(tk, f) != policy.ReproduceOff, taskData(tk, f, th))
}
