package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/prompts"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/text"
	"github.com/agentbot/agentbot/runner/tools"
	"github.com/agentbot/agentbot/runner/workspace"
)

// review answers "/agent review" on a pull request, a person's or the
// agent's: the loop reads a checkout of the head with the read tools
// (the diff since the base branch, the files around it, the writers'
// conversation and the base branch's review guidance in its prompt) and
// reports findings; the host then proves each finding that comes with a
// test (prove), and one GitHub review carries the findings worth posting,
// most severe first. Nothing is pushed, and the task is admitted,
// audited, traced and bounded by review.limits as a fix is by limits.
// A pull request event starts the same review when review.auto asks for
// it (autoReview). A pull request reviewed before shows the model only
// what changed since, and the earlier findings are looked at again
// (review_again.go).
//
// A fork's head is hostile: its policy is the default branch's as for
// every task, trigger.allow_forks decides whether it is served at all,
// and the setup that runs over its tree for a proof has no network, as
// every setup over a pull request's head (setupOf).
func (r *Runner) review(ctx context.Context, tk *task) error {
	if tk.Auto != nil {
		// Nobody asked in words: the review and its check run say all.
		tk.status = unsaid{}
	}
	if err := r.admit(ctx, tk); err != nil {
		return err
	}
	pull := tk.issue.Pull
	if pull == nil {
		return finished(app.StateRefused, text.NotAPull(tk.Verb, tk.policy.Policy.Trigger.Command, tk.Number), "")
	}
	if err := tk.rep.react(ctx, app.ReactionReceived); err != nil {
		return err
	}
	tk.rep.phase(ctx, "admission")
	p := &tk.policy.Policy
	p.Limits = p.ReviewLimits()
	r.nameModels(p)

	ws, err := r.readCheckout(ctx, tk)
	if err != nil {
		return err
	}
	defer ws.Close()
	env := &proofEnv{r: r, tk: tk, ws: ws}
	defer env.release()
	base, err := ws.MergeBase(ctx, pull.BaseSHA, ws.Base())
	if err != nil {
		// Histories that share no commit: the base branch as it is.
		tk.log.Warn("no merge base; reviewing against the base branch's head", "base", pull.BaseSHA, "err", err)
		base = pull.BaseSHA
	}
	if err := r.touchesPaths(ctx, tk, ws, base); err != nil {
		return err
	}
	diff, err := ws.DiffSince(ctx, base)
	if err != nil {
		return err
	}
	prior, err := r.priorReview(ctx, tk)
	if err != nil {
		return err
	}
	since, shown := sinceReview(ctx, tk, ws, prior, base), diff
	if since != base {
		if shown, err = ws.DiffSince(ctx, since); err != nil {
			return err
		}
	}
	tk.rep.phase(ctx, "workspace")

	st, err := r.reviewLoop(ctx, tk, ws, base, since, shown)
	if err != nil {
		return err
	}
	tk.rep.ran(st)
	tk.rep.phase(ctx, "agent")
	if st.Status != app.StateSucceeded {
		report := tk.rep.report(st)
		return finished(app.StateFailed, text.NoReview(report), text.Reason(st, text.Failure{Stop: st.Stop})).
			withCheck(app.ConclusionFailure, text.NoReviewCheck(report))
	}
	rv := tk.prog.Review
	if rv == nil {
		rv = &reviewProgress{Base: base}
		for _, f := range findingsOf(st) {
			rv.Findings = append(rv.Findings, reviewed{Finding: f})
		}
	}
	tk.prog.Review = rv
	if err := r.recheck(ctx, tk, ws, env, prior); err != nil {
		return err
	}
	// A finding whose thread is still open is not posted again, nor
	// proven again: the thread already says it.
	rv.Findings = slices.DeleteFunc(rv.Findings, func(f reviewed) bool { return repeats(rv.Carried, f.Finding) })
	if err := r.proveAll(ctx, tk, ws, env, rv); err != nil {
		return err
	}
	return r.postReview(ctx, tk, st, diff)
}

// autoReview decides on a review a pull request event started: the
// policy's review.auto and review.drafts, trigger.allow_forks for a fork's
// pull request, and the head the event named, which must still be the
// pull request's (a later push's event reviews the later head). It is the
// worker's decision, not intake's: the policy is the default branch's,
// which only the worker reads, and intake answers without a GitHub call.
func autoReview(tk *task) app.Decision {
	pull := tk.issue.Pull
	p := tk.policy.Policy
	switch d := p.Review.Starts(*tk.Auto); {
	case !d.Allowed:
		return d
	case pull == nil:
		return app.Decision{Reason: fmt.Sprintf("#%d is no pull request", tk.Number)}
	case pull.HeadSHA != tk.Auto.HeadSHA:
		return app.Decision{Reason: fmt.Sprintf("the pull request's head moved from %s to %s, whose own event reviews it", text.ShortSHA(tk.Auto.HeadSHA), text.ShortSHA(pull.HeadSHA))}
	case pull.HeadRepo != tk.Repo && !p.Trigger.AllowForks:
		return app.Decision{Reason: "the pull request comes from a fork, and trigger.allow_forks is false"}
	default:
		return d
	}
}

// touchesPaths ends an automatic review, quietly, of a pull request that
// changes none of review.paths since base.
func (r *Runner) touchesPaths(ctx context.Context, tk *task, ws *workspace.Workspace, base string) error {
	if tk.Auto == nil || len(tk.policy.Policy.Review.Paths) == 0 {
		return nil
	}
	changed, err := ws.ChangedPaths(ctx, base)
	if err != nil {
		return err
	}
	if tk.policy.Policy.Review.Touches(changed) {
		return nil
	}
	return ignored("the pull request changes none of review.paths")
}

// unsaid is the status comment of a task nobody asked for in words.
type unsaid struct{}

func (unsaid) Set(context.Context, string) error { return nil }

// reviewLoop runs the read-only review loop over ws, the head, which left
// the base branch at base; diff is its change since the commit since:
// base, or the head an earlier review read.
func (r *Runner) reviewLoop(ctx context.Context, tk *task, ws *workspace.Workspace, base, since, diff string) (*agent.State, error) {
	p := tk.policy.Policy
	th, err := r.thread(ctx, tk)
	if err != nil {
		return nil, err
	}
	repo, err := prompts.LoadRepo(ws.Root().FS())
	if err != nil {
		return nil, fmt.Errorf("read the repository for the prompt: %w", err)
	}
	// The guidance is the base branch's: a pull request does not write
	// its own reviewer's instructions.
	guides, err := ws.ReadFiles(ctx, base, prompts.ReviewGuidanceFiles)
	if err != nil {
		return nil, err
	}
	repo.Guidance = prompts.ReviewGuidance(guides)
	system, err := prompts.Review(prompts.ReviewData{Limits: p.Limits, Checks: p.Checks, MinSeverity: p.Review.MinSeverity})
	if err != nil {
		return nil, err
	}
	ask := "Review this pull request."
	if q := strings.TrimSpace(tk.Instructions); q != "" {
		ask += " The reviewer asks: " + q
	}
	prompt, err := prompts.ReviewTask(prompts.ReviewTaskData{Task: prompts.TaskData{Repo: tk.Repo, Title: tk.issue.Title, Thread: th,
		Instructions: ask, Review: tk.ReviewComment, Context: repo}, Base: text.ShortSHA(since), Head: text.ShortSHA(ws.Base()), Again: since != base, Diff: diff})
	if err != nil {
		return nil, err
	}
	if err := tk.rep.say(ctx, text.Running(tk.request(), "reviewing the change")); err != nil {
		return nil, err
	}
	return r.readLoop(ctx, tk, agent.Config{TaskID: tk.ID, Policy: p, Workspace: ws, Review: true,
		System: system, Task: prompt, Images: r.images(ctx, tk, th)})
}

// findingsOf reads the findings report_finding accepted from the loop's
// transcript.
func findingsOf(st *agent.State) []tools.Finding {
	var calls []tools.Call
	results := map[string]string{}
	for _, m := range st.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, tools.Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		if m.ToolCallID != "" {
			results[m.ToolCallID] = m.Content
		}
	}
	return tools.FindingsOf(calls, func(id string) string { return results[id] })
}

// reviewProgress is a review's resumable state: its findings and what
// the host proved of each.
type reviewProgress struct {
	Base     string     `json:"base"` // the merge base the head is compared with
	Findings []reviewed `json:"findings"`
	Posted   int        `json:"posted,omitempty"` // inline comments posted
	ReviewID int64      `json:"review_id,omitempty"`
	// Rechecked are the earlier reviews' findings whose open thread this
	// review ran the test of again (review_again.go).
	Rechecked []rechecked `json:"rechecked,omitempty"`
	// Carried are the earlier findings still open after this review, for
	// the next one to look at again.
	Carried []reviewed `json:"carried,omitempty"`
}

// reviewed is a finding and its proof.
type reviewed struct {
	tools.Finding
	Proof *Proof `json:"proof,omitempty"`
	// CommentID is the inline comment that posted it, which begins its
	// thread, in the review ReviewID; 0 when it was not posted inline.
	CommentID int64 `json:"comment_id,omitempty"`
	ReviewID  int64 `json:"review_id,omitempty"`
}

// Proof is what the host observed of a finding's test: run over the
// head's tree with the test file laid over it, in a fresh sandbox, and,
// where the base has the file the finding is about, over the base's.
type Proof struct {
	Head *Verification `json:"head,omitempty"`
	Base *Verification `json:"base,omitempty"` // nil when the base lacks the code
	// Proven: the test fails on the head and passes on the base (or the
	// base lacks the code).
	Proven bool `json:"proven"`
	// PreExisting: it fails on the base too, so the pull request did not
	// introduce what it shows.
	PreExisting bool `json:"pre_existing,omitempty"`
	// BaseLacks: the base has not the code the test is about (no file, or
	// the test does not build there), so failing on the head proves it.
	BaseLacks bool `json:"base_lacks,omitempty"`
	// Why it is not proven, as a sentence's end.
	Why string `json:"why,omitempty"`
}

// proveAll proves each finding that has a test and no proof yet, over
// env, saving the progress after each.
func (r *Runner) proveAll(ctx context.Context, tk *task, ws *workspace.Workspace, env *proofEnv, rv *reviewProgress) error {
	for i := range rv.Findings {
		f := &rv.Findings[i]
		if f.Test == nil || f.Proof != nil {
			continue
		}
		prepared, err := env.get(ctx)
		if err != nil {
			return err
		}
		if err := tk.rep.running(ctx, "proof", fmt.Sprintf("running the test of finding %d on %s and %s", i+1, text.ShortSHA(ws.Base()), text.ShortSHA(rv.Base))); err != nil {
			return err
		}
		pr, err := r.prove(ctx, tk, ws, prepared, rv.Base, f.Finding, fmt.Sprintf("%s-proof%d", tk.ID, i+1))
		if err != nil {
			return err
		}
		f.Proof = pr
		if err := tk.rep.save(ctx); err != nil {
			return err
		}
	}
	tk.rep.phase(ctx, "proof")
	return nil
}

// proofEnv is the environment a review's proofs run over: the one a fix
// of the pull request would use, from the environment cache when its key
// matches (the head's lock files are the default branch's), or else built
// for the task alone without network, as for every tree of a pull
// request's head. It is prepared once, when the first proof needs it, and
// released when the review ends.
type proofEnv struct {
	r   *Runner
	tk  *task
	ws  *workspace.Workspace // the review's checkout
	env *Prepared            // nil until prepared, or tried
}

// get prepares the environment, the first time; nil for a worker that
// keeps none, whose proofs run setup in each proof's tree. When it cannot
// be prepared, each proof runs the setup over its own tree, where it
// fails again and proves nothing, said so in the finding.
func (p *proofEnv) get(ctx context.Context) (*Prepared, error) {
	r, tk := p.r, p.tk
	if p.env != nil || r.cfg.Envs == nil {
		return p.env, nil
	}
	if err := sandbox.ShareTree(p.ws.Dir()); err != nil {
		return nil, fmt.Errorf("share the review's tree with the sandbox: %w", err)
	}
	setup := r.setupOf(ctx, tk, p.ws.Dir(), tk.ID+"-setup")
	env, detail, err := change.Prepare(ctx, setup, r.cfg.Envs, envOwner(tk), tk.Repo, p.ws.Root().FS())
	if sf, ok := errors.AsType[*SetupFailure](err); ok {
		tk.log.Warn("no prepared environment for the proofs", "err", sf)
		p.env = &Prepared{Image: cmp.Or(tk.policy.Policy.Sandbox.Image, r.cfg.Sandbox.Image())} // tried once
		return p.env, nil
	}
	if err != nil {
		return nil, err
	}
	tk.rep.setupPhase(ctx, detail)
	p.env = env
	return env, nil
}

// release lets the environment cache evict the environment again.
func (p *proofEnv) release() { p.env.Release(p.tk.log) }

// prove runs f's test, over env, on the head and, when the base has f's
// file, on the base, each as the final verification runs checks: a fresh tree made
// by the host, a fresh sandbox without network, the policy's checks in
// order (a plain "go test" narrowed to the file's tests).
func (r *Runner) prove(ctx context.Context, tk *task, ws *workspace.Workspace, env *Prepared, base string, f tools.Finding, id string) (*Proof, error) {
	hv, checks, err := r.runTest(ctx, tk, ws, env, ws.Base(), f, id+"-head")
	if err != nil {
		return nil, err
	}
	pr := &Proof{Head: &hv}
	traceProof(ctx, tk, "head", ws.Base(), hv)
	if ok, why := failsWithTest(hv, checks); !ok {
		pr.Why = why + " on the head " + text.ShortSHA(ws.Base())
		return pr, nil
	}
	have, err := ws.ReadFiles(ctx, base, []string{f.Path})
	if err != nil {
		return nil, err
	}
	if _, ok := have[f.Path]; !ok {
		pr.Proven, pr.BaseLacks = true, true // the code is new: failing on the head proves it
		return pr, nil
	}
	bv, _, err := r.runTest(ctx, tk, ws, env, base, f, id+"-base")
	if err != nil {
		return nil, err
	}
	pr.Base = &bv
	traceProof(ctx, tk, "base", base, bv)
	failsThere, _ := failsWithTest(bv, checks)
	switch {
	case bv.Passed:
		pr.Proven = true
	case len(bv.NotRun) == len(checks):
		pr.Why = "the repository's setup failed on the base " + text.ShortSHA(base) + ", so the test did not run there"
	case failsThere:
		pr.PreExisting = true
		pr.Why = "the test fails on the base " + text.ShortSHA(base) + " too: the pull request did not introduce it"
	default:
		// The test does not build there: the base lacks the code it tests.
		pr.Proven, pr.BaseLacks = true, true
	}
	return pr, nil
}

// runTest runs f's test over the commit at with the test file laid over
// it, in a fresh sandbox (id) over env without network, through the policy's checks
// (a plain "go test" narrowed to the file's tests), which it returns.
func (r *Runner) runTest(ctx context.Context, tk *task, ws *workspace.Workspace, env *Prepared, at string, f tools.Finding, id string) (Verification, []policy.Check, error) {
	checks := change.NarrowChecks(tk.policy.Policy.Checks, goTestNames(f.Test.Path, f.Test.Content))
	tree, err := ws.WithFiles(ctx, at, map[string]string{f.Test.Path: f.Test.Content})
	if err != nil {
		return Verification{}, nil, err
	}
	v, err := r.fresh(ctx, tk, env).Run(ctx, ws, tree, id, checks)
	return v, checks, err
}

// failsWithTest reports whether v failed because a test failed, not
// because the setup, the build or a timeout did; why says otherwise.
func failsWithTest(v Verification, checks []policy.Check) (bool, string) {
	switch {
	case v.Passed:
		return false, "the test passes"
	case len(v.NotRun) == len(checks):
		return false, "the repository's setup failed, so the test did not run"
	}
	c := v.Checks[len(v.Checks)-1]
	if c.TimedOut {
		return false, fmt.Sprintf("check %s timed out", c.Name)
	}
	if len(change.FailedTests(c.Output)) == 0 {
		return false, fmt.Sprintf("check %s failed without a failing test (the test may not build)", c.Name)
	}
	return true, ""
}

// goTestRE finds a Go test file's top-level tests.
var goTestRE = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)

// goTestNames are the tests of a Go test file, for narrowChecks; none
// for another language, whose checks run whole.
func goTestNames(path, content string) []string {
	if !strings.HasSuffix(path, "_test.go") {
		return nil
	}
	var names []string
	for _, m := range goTestRE.FindAllStringSubmatch(content, -1) {
		names = append(names, m[1])
	}
	return names
}

// traceProof records each check a proof ran.
func traceProof(ctx context.Context, tk *task, side, commit string, v Verification) {
	end := time.Now().UTC()
	for _, c := range v.Checks {
		tk.rep.traceCheck(ctx, end, 0, "proof "+side+" "+c.Name, c,
			fmt.Sprintf("%s with the finding's test, fresh sandbox %s: %s", text.ShortSHA(commit), text.ShortID(v.Container), c.Run))
	}
}

// sortFindings orders findings as a review shows them: most severe
// first, proven before unproven, then as reported.
func sortFindings(fs []reviewed) []reviewed {
	out := slices.Clone(fs)
	slices.SortStableFunc(out, func(a, b reviewed) int {
		return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), cmp.Compare(rankProof(b.Proof), rankProof(a.Proof)))
	})
	return out
}

func rankProof(p *Proof) int {
	if p != nil && p.Proven {
		return 1
	}
	return 0
}
