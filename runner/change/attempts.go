package change

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// Best of N. Under limits.attempts: N the loop runs N times side by side,
// each attempt in a work tree and sandbox of its own over the environment
// setup prepared once, and every attempt that finishes is gated, verified
// and reproduced as a change of one attempt is. The changes that pass are
// ranked by rank, and the best is the one to propose.

// AttemptID is the id under which attempt n of limits.attempts of change
// id saves its loop's state; a change of one attempt saves it under its
// own.
func AttemptID(id string, n int) string { return fmt.Sprintf("%s-attempt-%d", id, n) }

// AttemptPolicy is policy p as attempt i (from 0) of n runs it: with its
// edit model from model.attempts and its temperature from
// model.temperatures, each in turn, and its budgets.
//
// Iterations and the wall clock are each attempt's whole: the attempts
// run side by side, so the task takes no longer for them, and an attempt
// with a fraction of the steps would be weaker than the task's only one,
// which is not what asking for more attempts means. Tokens are split
// evenly, so that the task's sum stays within limits.tokens. The cost
// stays whole but counts every attempt's spending (Hooks.Spent): the
// attempts' models may be priced differently, so a fixed share would
// leave a cheap model's unspent, and once the sum reaches cost_usd every
// attempt stops.
func AttemptPolicy(p policy.Policy, i, n int) policy.Policy {
	if m := p.Model.Attempts; len(m) > 0 {
		p.Model.Edit = m[i%len(m)]
	}
	if ts := p.Model.Temperatures; len(ts) > 0 {
		p.Model.Temperature = new(ts[i%len(ts)])
	}
	if n > 1 && p.Limits.Tokens > 0 {
		p.Limits.Tokens = max(1, p.Limits.Tokens/int64(n))
	}
	return p
}

// bestOf runs n attempts side by side, the first over r's tree and the
// others over checkouts of their own, judges each change as its loop
// ends, and picks the one to propose: the best that passed, else the
// draft, else the first. r.Attempts holds every tree made, also on error.
func (m *making) bestOf(ctx context.Context, r Result, n int) (Result, error) {
	for i := range n {
		at := Attempt{N: i + 1, ID: AttemptID(m.ID, i+1), Tree: m.Tree, Policy: AttemptPolicy(m.Policy, i, n)}
		if i > 0 {
			tree, err := m.Checkout(ctx)
			if err != nil {
				return r, err
			}
			at.Tree = tree
		}
		r.Attempts = append(r.Attempts, at)
		if i == 0 {
			continue
		}
		if ended, err := m.setUp(ctx, &r.Attempts[i]); ended != nil || err != nil {
			r.Ended = ended
			return r, err
		}
	}
	if err := m.report(ctx, Event{Step: StepLoop, Of: n}); err != nil {
		return r, err
	}
	// Each attempt's change is judged as soon as its loop ends, while the
	// others may still run: the change takes as long as its slowest
	// attempt and that one's verification.
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range r.Attempts {
		wg.Go(func() {
			at := &r.Attempts[i]
			if errs[i] = m.attempt(actx, at); stoppedBy(at) != nil {
				// A stop is the change's: the verifications still
				// running end too, and their errors are the stop's.
				cancel()
			}
		})
	}
	wg.Wait()
	for _, at := range r.Attempts {
		if stoppedBy(&at) != nil {
			r.Attempt = at
			return r, nil
		}
	}
	for i, err := range errs {
		if err != nil {
			errs[i] = fmt.Errorf("attempt %d: %w", i+1, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Any one sends the change back, to resume every attempt from
		// its saved state.
		return r, err
	}
	if err := m.report(ctx, Event{Step: StepLoop, Done: true, Of: n}); err != nil {
		return r, err
	}
	var cands []candidate
	for _, at := range r.Attempts {
		if at.Ended == nil {
			cands = append(cands, candidateOf(at))
		}
	}
	if ranked := rank(cands); len(ranked) > 0 {
		r.Winner, r.Why = ranked[0].n, whyWon(ranked)
		r.Attempt = r.Attempts[r.Winner-1]
		return r, nil
	}
	r.Attempt = r.Attempts[0]
	if d := m.draft(r.Attempts); d > 0 {
		r.Draft = d
		at := &r.Attempts[d-1]
		if at.Verified == nil {
			if err := m.judge(ctx, at); err != nil {
				return r, err
			}
		}
		r.Attempt = *at
	}
	return r, nil
}

// setUp readies another attempt's tree as setup readied the change's:
// without a prepared environment to share, setup runs in it too.
func (m *making) setUp(ctx context.Context, at *Attempt) (*Ended, error) {
	if len(m.Setup.Policy.Run) > 0 && !m.env.Kept() {
		s := m.Setup
		s.Spec.WorkTree, s.Spec.TaskID = at.Tree.Dir(), at.ID+"-setup"
		err := s.Run(ctx)
		if sf, ok := errors.AsType[*SetupFailure](err); ok {
			return &Ended{Step: StepSetup, State: app.StateFailed, Reason: sf.Error(), Cause: sf}, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if err := sandbox.ShareTree(at.Tree.Dir()); err != nil {
		return nil, fmt.Errorf("share the work tree with the sandbox: %w", err)
	}
	return nil, nil
}

// draft is the attempt to propose as a draft when none passed and the
// policy asks for drafts, or 0: the first whose verification failed, else
// the first whose loop failed with a change. A change the gate passed and
// the verification failed is preferred to one whose loop did not finish.
func (m *making) draft(ats []Attempt) int {
	if !m.Draft {
		return 0
	}
	if d := slices.IndexFunc(ats, func(at Attempt) bool { return at.Ended.Step == StepVerification }); d >= 0 {
		return d + 1
	}
	return slices.IndexFunc(ats, func(at Attempt) bool {
		return at.Ended.Step == StepLoop && at.Loop.Stop != nil && at.Loop.Diff != ""
	}) + 1
}

// stoppedBy is the stop that ended at, or nil.
func stoppedBy(at *Attempt) *Stopped {
	if at.Ended == nil {
		return nil
	}
	s, _ := at.Ended.Cause.(*Stopped)
	return s
}

// candidateOf is a change that passed, as rank sees it.
func candidateOf(at Attempt) candidate {
	return candidate{n: at.N, reproduced: at.Reproduction != nil && at.Reproduction.Reproduced,
		lines: at.Gate.LinesAdded + at.Gate.LinesDeleted, files: at.Gate.FilesChanged,
		tampered: !at.Gate.Tampering.Empty(), tokens: at.Loop.Usage.Total()}
}

// candidate is an attempt whose change passed, as the ranking sees it.
type candidate struct {
	n          int // the attempt, from 1
	reproduced bool
	lines      int // changed, added and deleted
	files      int
	tampered   bool // the tampering report flags tests or configuration
	tokens     int64
}

// rankCriteria order candidates, the first that tells two apart deciding:
// a fix proven by a test, then the smaller change, then one that leaves
// tests and configuration alone, then the cheaper run. why says so of a
// winner a over the runner-up b.
var rankCriteria = []struct {
	cmp func(a, b candidate) int
	why func(a, b candidate) string
}{
	{func(a, b candidate) int { return compareBool(b.reproduced, a.reproduced) },
		func(a, b candidate) string {
			return fmt.Sprintf("a test reproduces its fix and none reproduces attempt %d's", b.n)
		}},
	{func(a, b candidate) int { return cmp.Compare(a.lines, b.lines) },
		func(a, b candidate) string {
			return fmt.Sprintf("it changes %d lines against attempt %d's %d", a.lines, b.n, b.lines)
		}},
	{func(a, b candidate) int { return cmp.Compare(a.files, b.files) },
		func(a, b candidate) string {
			return fmt.Sprintf("it changes %d files against attempt %d's %d", a.files, b.n, b.files)
		}},
	{func(a, b candidate) int { return compareBool(a.tampered, b.tampered) },
		func(a, b candidate) string {
			return fmt.Sprintf("it leaves tests and configuration alone, and attempt %d does not", b.n)
		}},
	{func(a, b candidate) int { return cmp.Compare(a.tokens, b.tokens) },
		func(a, b candidate) string {
			return fmt.Sprintf("it took %d tokens against attempt %d's %d", a.tokens, b.n, b.tokens)
		}},
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// rank orders candidates best first by rankCriteria; a tie goes to the
// earlier attempt.
func rank(cs []candidate) []candidate {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b candidate) int {
		for _, c := range rankCriteria {
			if d := c.cmp(a, b); d != 0 {
				return d
			}
		}
		return cmp.Compare(a.n, b.n)
	})
	return out
}

// whyWon says why the first of ranked, rank's result, is ahead of the
// second.
func whyWon(ranked []candidate) string {
	switch len(ranked) {
	case 0:
		return ""
	case 1:
		return "it is the only one that passed"
	}
	a, b := ranked[0], ranked[1]
	for _, c := range rankCriteria {
		if c.cmp(a, b) != 0 {
			return c.why(a, b)
		}
	}
	return fmt.Sprintf("it ties with attempt %d on every count and ran first", b.n)
}
