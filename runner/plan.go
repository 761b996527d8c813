package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/workspace"
)

// History reads the outcomes of finished tasks, for a plan's cost
// estimate; queue.Outcomes satisfies it.
type History interface {
	Since(ctx context.Context, since time.Time) ([]app.TaskOutcome, error)
}

// plan is the plan a fix wrote before it changed anything (quality.plan),
// kept in the task's progress so that a task resumed, approved or revised
// finds it.
type plan struct {
	Version int      `json:"version"` // 1 for the first, one more for each revision
	Text    string   `json:"text"`    // the model's plan, as it wrote it
	Files   []string `json:"files,omitempty"`
	// Notes is how many of the task's notes the plan took in: a note
	// past them revises it.
	Notes    int       `json:"notes,omitempty"`
	Estimate string    `json:"estimate,omitempty"`
	PostedAt time.Time `json:"posted_at"`
	// ApprovedBy is who approved it with "/agent approve"; DeniedBy who
	// refused it with "/agent deny".
	ApprovedBy string `json:"approved_by,omitempty"`
	DeniedBy   string `json:"denied_by,omitempty"`
}

// planWait is the step a task shows while its plan waits for approval.
const planWait = "waiting for /agent approve of the plan"

// planFirst writes, or revises after a note, the plan of a fix (following
// up on f) whose policy asks for one, and posts it. While the plan waits for "/agent
// approve" the task pauses (an *ended), holding no sandbox and no slot,
// and an approval or a note takes it up again. A plan denied, or left
// waiting past limits.wall_clock, ends the task.
func (r *Runner) planFirst(ctx context.Context, tk *task, f *followUp, ws *workspace.Workspace) error {
	mode := tk.policy.Policy.PlanFor()
	p := tk.prog.Plan
	switch {
	case mode == policy.PlanOff:
		return nil
	case p != nil && p.DeniedBy != "":
		return finished(app.StateStopped, text.PlanDenied(tk.request(), p.DeniedBy), "plan denied")
	case p != nil && (mode == policy.PlanShow || p.ApprovedBy != ""):
		return nil
	}
	if wc := tk.policy.Policy.Limits.WallClock; p != nil && wc > 0 && time.Since(p.PostedAt) > wc {
		return finished(app.StateStopped, text.PlanExpired(tk.request(), wc), "plan expired")
	}
	notes, err := r.notesOf(ctx, tk)
	if err != nil {
		return err
	}
	if p == nil || len(notes) > p.Notes {
		if p, err = r.writePlan(ctx, tk, f, ws, p, notes); err != nil || p == nil {
			return err
		}
		tk.prog.Plan = p
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
		if err := tk.rep.say(ctx, text.PlanStatus(tk.request(), planView(tk, p), mode == policy.PlanApprove, tk.policy.Policy.Trigger.Command)); err != nil {
			return err
		}
		tk.log.Info("plan posted", "version", p.Version, "files", len(p.Files), "mode", mode)
	}
	if mode == policy.PlanShow {
		return nil
	}
	return paused(planWait, "")
}

// notesOf are the notes kept for tk; none without a store for them.
func (r *Runner) notesOf(ctx context.Context, tk *task) ([]app.Note, error) {
	if r.cfg.Notes == nil {
		return nil, nil
	}
	return r.cfg.Notes.Notes(ctx, tk.ID, 0)
}

// writePlan runs a read-only loop over ws that answers with the plan: the
// task (with f, what a follow-up addresses), and for a revision the plan before and every note. A loop that
// gives no plan ends the task (reported; nil plan).
func (r *Runner) writePlan(ctx context.Context, tk *task, f *followUp, ws *workspace.Workspace, prev *plan, notes []app.Note) (*plan, error) {
	p := tk.policy.Policy
	version := 1
	if prev != nil {
		version = prev.Version + 1
	}
	if err := tk.rep.running(ctx, "plan", "the agent is writing its plan, reading the code only"); err != nil {
		return nil, err
	}
	th, err := r.thread(ctx, tk)
	if err != nil {
		return nil, err
	}
	_, prompt, err := renderPrompts(tk, f, ws, th)
	if err != nil {
		return nil, err
	}
	system, err := prompts.Plan(prompts.SystemData{Checks: p.Checks, Paths: p.Paths, Limits: p.Limits})
	if err != nil {
		return nil, err
	}
	if prev != nil {
		prompt += "\n\n## Your plan before the notes below — revise it to take them in\n\n<plan>\n" + strings.ReplaceAll(prev.Text, "</plan", "&lt;/plan") + "\n</plan>"
		for _, n := range notes {
			framed, err := prompts.Note(prompts.NoteData{By: n.By, At: n.At, Text: n.Text})
			if err != nil {
				return nil, err
			}
			prompt += "\n\n" + framed
		}
	}
	r.nameModels(&p)
	st, err := r.readLoop(ctx, tk, agent.Config{TaskID: fmt.Sprintf("%s-plan-%d", tk.ID, version), Policy: p, Workspace: ws, ReadOnly: true,
		System: system, Task: prompt, Images: r.images(ctx, tk, th)})
	if err != nil {
		return nil, err
	}
	if st.Status != app.StateSucceeded || strings.TrimSpace(st.Summary) == "" {
		tk.rep.ran(st)
		return nil, failed(st, text.Failure{Stop: st.Stop})
	}
	return &plan{Version: version, Text: st.Summary, Files: planFiles(st.Summary), Notes: len(notes),
		Estimate: r.estimate(ctx, tk), PostedAt: time.Now().UTC()}, nil
}

// planFile is one line of a plan's Files section: "- `path`".
var planFile = regexp.MustCompile("^\\s*[-*]\\s+`([^`]+)`")

// planFiles are the files a plan names under its "## Files" heading.
func planFiles(text string) []string {
	var files []string
	in := false
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") {
			in = strings.EqualFold(strings.TrimSpace(strings.TrimLeft(line, "#")), "Files")
			continue
		}
		if m := planFile.FindStringSubmatch(line); in && m != nil && !slices.Contains(files, m[1]) {
			files = append(files, m[1])
		}
	}
	return files
}

// historyWindow is how far back the estimate looks for similar tasks.
const historyWindow = 90 * 24 * time.Hour

// estimate is what similar tasks cost: the finished fixes of the same
// repository over historyWindow, from the outcomes "agentbot stats"
// reads, as their median and range.
func (r *Runner) estimate(ctx context.Context, tk *task) string {
	if r.cfg.History == nil {
		return text.NoHistory
	}
	all, err := r.cfg.History.Since(ctx, time.Now().Add(-historyWindow))
	if err != nil {
		tk.log.Warn("read the outcomes for the plan's estimate", "err", err)
		return text.HistoryUnreadable
	}
	var steps, tokens, cost []float64
	for _, o := range all {
		if strings.EqualFold(o.Repo, tk.Repo) && o.Iterations > 0 {
			steps, tokens, cost = append(steps, float64(o.Iterations)), append(tokens, float64(o.Tokens)), append(cost, o.Cost)
		}
	}
	return text.Estimate(tk.Repo, int(historyWindow.Hours()/24), steps, tokens, cost)
}

// planView is p as tk's texts show it.
func planView(tk *task, p *plan) text.Plan {
	v := text.Plan{Version: p.Version, Text: p.Text, Files: p.Files, Estimate: p.Estimate, ApprovedBy: p.ApprovedBy}
	if wc := tk.policy.Policy.Limits.WallClock; wc > 0 {
		v.Deadline = p.PostedAt.Add(wc)
	}
	return v
}

// awaitingPlan is the newest task on tk's issue whose plan waits for
// approval; "" when none does.
func (r *Runner) awaitingPlan(ctx context.Context, tk *task) (string, error) {
	all, err := r.cfg.Tasks.OnIssue(ctx, tk.Repo, tk.Number)
	if err != nil {
		return "", err
	}
	for _, t := range all {
		if t.State == app.StateAwaitingApproval && t.Step == planWait {
			return t.ID, nil
		}
	}
	return "", nil
}

// decidePlan records "/agent approve" or "/agent deny" on the plan that
// waits on tk's issue, if one does, in that task's progress, and sets it
// as the task tk resumes. The issue's lock is held.
func (r *Runner) decidePlan(ctx context.Context, tk *task) error {
	id, err := r.awaitingPlan(ctx, tk)
	if err != nil || id == "" {
		return err
	}
	prog, err := r.loadProgress(ctx, id)
	if err != nil {
		return err
	}
	if prog.Plan == nil {
		return fmt.Errorf("task %s waits for approval of a plan it does not have", id)
	}
	approve := tk.Verb == app.VerbApprove
	kind := app.AuditDenial
	if approve {
		prog.Plan.ApprovedBy, kind = tk.Requester, app.AuditApproval
	} else {
		prog.Plan.DeniedBy = tk.Requester
	}
	if err := r.saveProgress(ctx, id, prog); err != nil {
		return err
	}
	if err := tk.rep.audit(ctx, kind, fmt.Sprintf("plan %d of task %s", prog.Plan.Version, id)); err != nil {
		return err
	}
	tk.log.Info("plan decided", "paused", id, "approve", approve)
	tk.prog.Resumes = id
	return tk.rep.save(ctx)
}

// revisePlan takes up task id, whose plan waits on tk's issue, after a
// note: holding the issue's lock, it runs it on to a revised plan, which
// waits again.
func (r *Runner) revisePlan(ctx context.Context, tk *task, id string) error {
	return r.held(ctx, tk, func(ctx context.Context) error {
		_, err := r.goOn(ctx, tk, id)
		return err
	})
}

// approvedPlan is the plan, once shown or approved, as the loop's task
// message ends: the work it is held to.
func approvedPlan(tk *task) string {
	p := tk.prog.Plan
	if p == nil {
		return ""
	}
	who := "which was shown to the requester"
	if p.ApprovedBy != "" {
		who = "which @" + p.ApprovedBy + " approved"
	}
	return fmt.Sprintf("\n\n## Your plan, %s\n\nKeep to it; where the code makes you depart from it, say why in finish's summary.\n\n<plan>\n%s\n</plan>",
		who, strings.ReplaceAll(p.Text, "</plan", "&lt;/plan"))
}

// saveProgress keeps the progress of the task id, which is not running:
// a plan's decision, recorded for it.
func (r *Runner) saveProgress(ctx context.Context, id string, prog progress) error {
	raw, err := json.Marshal(prog)
	if err != nil {
		return err
	}
	if err := r.cfg.Store.SaveProgress(ctx, id, raw); err != nil {
		return fmt.Errorf("save progress of task %s: %w", id, err)
	}
	return nil
}
