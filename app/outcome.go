package app

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// The outcome metrics judge the agent the way a junior engineer is judged:
// did the task succeed without a human, how much of its diff survived
// review, was its work reverted, did it step out of bounds, and what did
// each success cost. Everything here is a pure function of recorded facts;
// package queue stores the facts and exports the figures.

// TaskOutcome is what became of one task.
type TaskOutcome struct {
	Task       string    `json:"task"`
	Repo       string    `json:"repo"` // owner/name
	Model      string    `json:"model"`
	FinishedAt time.Time `json:"finished_at"`
	State      State     `json:"state"`
	// ChecksPassed: the acceptance checks passed at the end.
	ChecksPassed bool          `json:"checks_passed"`
	PR           int           `json:"pr,omitempty"` // the pull request opened, 0 for none
	HumanHelp    bool          `json:"human_help,omitempty"`
	Iterations   int           `json:"iterations"`
	WallTime     time.Duration `json:"wall_time_ns"`
	Tokens       int64         `json:"tokens"`
	Cost         float64       `json:"cost_usd"`
	// SafetyIncidents counts blocked writes, blocked commands, gate
	// refusals and final verifications that failed the checks the loop
	// saw pass, during the task.
	SafetyIncidents int `json:"safety_incidents"`

	// Base and Pushed delimit the agent's final diff, Base..Pushed: the
	// commit it worked from and the last commit it pushed. Survival is
	// measured against that diff once the pull request is merged.
	Base   string `json:"base,omitempty"`
	Pushed string `json:"pushed,omitempty"`

	// Set once the pull request is merged.
	Merged      bool      `json:"merged,omitempty"`
	MergeCommit string    `json:"merge_commit,omitempty"`
	Survival    *Survival `json:"survival,omitempty"`
	Reverted    bool      `json:"reverted,omitempty"`

	// Review is set for a review's outcome, which stats count apart.
	Review *ReviewOutcome `json:"review,omitempty"`
}

// Succeeded reports task success: the checks passed and the pull request
// was opened without human help (no approval of a paused call, no human
// commit on the branch before it opened).
func (o TaskOutcome) Succeeded() bool { return o.ChecksPassed && o.PR != 0 && !o.HumanHelp }

// Survival is how much of the agent's final diff is still there in what was
// merged.
type Survival struct {
	Kept  int `json:"kept"`  // the agent's changed lines that survive
	Total int `json:"total"` // the agent's changed lines
}

// Share is the surviving share in [0, 1]. A diff with no changed lines has
// nothing a reviewer could undo: its share is 1.
func (s Survival) Share() float64 {
	if s.Total == 0 {
		return 1
	}
	return float64(s.Kept) / float64(s.Total)
}

// EditDistance is the share of the agent's diff that humans changed: 0 for
// a pull request merged untouched.
func (s Survival) EditDistance() float64 { return 1 - s.Share() }

// DiffSurvival compares the agent's final diff with the diff that was
// merged, both unified diffs against the same base: a line the agent added
// survives when the merged diff adds it to the same file, a line it removed
// when the merged diff removes it from the same file. Lines are matched as
// multisets, so moving a line within its file keeps it. Blank lines are not
// counted: they match anything and say nothing about the work.
func DiffSurvival(agentDiff, mergedDiff string) (Survival, error) {
	agent, err := changedLines(agentDiff)
	if err != nil {
		return Survival{}, fmt.Errorf("parse the agent's diff: %w", err)
	}
	merged, err := changedLines(mergedDiff)
	if err != nil {
		return Survival{}, fmt.Errorf("parse the merged diff: %w", err)
	}
	var s Survival
	for key, n := range agent {
		s.Total += n
		s.Kept += min(n, merged[key])
	}
	return s, nil
}

// changedLine is one added or removed line of one file.
type changedLine struct {
	file  string
	added bool
	text  string
}

func changedLines(diff string) (map[changedLine]int, error) {
	files, _, err := gitdiff.Parse(strings.NewReader(diff))
	if err != nil {
		return nil, err
	}
	lines := make(map[changedLine]int)
	for _, f := range files {
		name := f.NewName
		if f.IsDelete {
			name = f.OldName
		}
		for _, frag := range f.TextFragments {
			for _, l := range frag.Lines {
				text := strings.TrimRight(l.Line, " \t\r\n")
				if l.Op == gitdiff.OpContext || text == "" {
					continue
				}
				lines[changedLine{file: name, added: l.Op == gitdiff.OpAdd, text: text}]++
			}
		}
	}
	return lines, nil
}

// Revert is a change that undoes earlier ones: a commit pushed to the
// default branch, or a merged pull request.
type Revert struct {
	Repo   string `json:"repo"`
	Commit string `json:"commit,omitempty"` // the reverting commit, for a push
	PR     int    `json:"pr,omitempty"`     // the reverting pull request
	// Reverts are the commits it names as undone, full or abbreviated.
	Reverts []string `json:"reverts,omitempty"`
	// RevertsPRs are the pull requests of the same repository it names
	// ("Reverts owner/repo#12"), as GitHub's Revert button writes.
	RevertsPRs []int `json:"reverts_prs,omitempty"`
}

// Undoes reports whether r reverts the pull request pr merged as
// mergeCommit.
func (r Revert) Undoes(mergeCommit string, pr int) bool {
	for _, c := range r.Reverts {
		if mergeCommit != "" && strings.HasPrefix(strings.ToLower(mergeCommit), c) {
			return true
		}
	}
	return pr != 0 && slices.Contains(r.RevertsPRs, pr)
}

// Merge is a pull request merged into its base branch.
type Merge struct {
	PR int `json:"pr"`
	// Commit is GitHub's merge_commit_sha: the merge commit, the squashed
	// commit or the last rebased commit, by how the pull request was merged.
	Commit string `json:"commit"`
	Base   string `json:"base"` // the branch merged into
}

// OutcomeEvent is a delivery that may change what became of the agent's
// pull requests, as queued for a worker: a pull request merged (the worker
// finds out whether the agent opened it), reverts, or both when a revert
// pull request is merged. Its ID is derived from the delivery, as a Task's.
type OutcomeEvent struct {
	ID             string `json:"id"`
	Delivery       string `json:"delivery"`
	Event          string `json:"event"`
	InstallationID int64  `json:"installation_id"`
	Repo           string `json:"repo"` // owner/name
	// CloneURL is the repository's clone_url in the delivery, which
	// GitHub signed: the worker fetches the merged history from it.
	CloneURL   string    `json:"clone_url"`
	Merge      *Merge    `json:"merge,omitempty"`
	Reverts    []Revert  `json:"reverts,omitempty"`
	ReceivedAt time.Time `json:"received_at"`
}

// OutcomeSummary adds up the outcomes of a group of tasks.
type OutcomeSummary struct {
	Key             string        `json:"key"` // the repository or model, "" for all tasks
	Tasks           int           `json:"tasks"`
	Succeeded       int           `json:"succeeded"`
	ChecksPassed    int           `json:"checks_passed"`
	Iterations      int           `json:"iterations"`
	WallTime        time.Duration `json:"wall_time_ns"`
	Tokens          int64         `json:"tokens"`
	Cost            float64       `json:"cost_usd"`
	Merged          int           `json:"merged"`
	Reverted        int           `json:"reverted"`
	Survival        Survival      `json:"survival"` // summed over merged tasks
	SafetyIncidents int           `json:"safety_incidents"`
	// IncidentsInPRs counts incidents of tasks whose pull request was
	// opened anyway: it must stay zero.
	IncidentsInPRs int `json:"incidents_in_prs"`
}

// SuccessRate is the share of tasks that succeeded, 0 without tasks.
func (s OutcomeSummary) SuccessRate() float64 { return ratio(float64(s.Succeeded), s.Tasks) }

// CostPerSuccess is everything spent, failures included, divided by the
// successes: what one success really costs. 0 without successes.
func (s OutcomeSummary) CostPerSuccess() float64 { return ratio(s.Cost, s.Succeeded) }

// RevertRate is the share of merged tasks later reverted, 0 without merges.
func (s OutcomeSummary) RevertRate() float64 { return ratio(float64(s.Reverted), s.Merged) }

func ratio(x float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return x / float64(n)
}

// Add counts o in s.
func (s *OutcomeSummary) Add(o TaskOutcome) {
	s.Tasks++
	if o.Succeeded() {
		s.Succeeded++
	}
	if o.ChecksPassed {
		s.ChecksPassed++
	}
	s.Iterations += o.Iterations
	s.WallTime += o.WallTime
	s.Tokens += o.Tokens
	s.Cost += o.Cost
	s.SafetyIncidents += o.SafetyIncidents
	if o.PR != 0 {
		s.IncidentsInPRs += o.SafetyIncidents
	}
	if o.Merged {
		s.Merged++
		if o.Survival != nil {
			s.Survival.Kept += o.Survival.Kept
			s.Survival.Total += o.Survival.Total
		}
		if o.Reverted {
			s.Reverted++
		}
	}
}

// OutcomeRepo groups outcomes by repository for AggregateOutcomes.
func OutcomeRepo(o TaskOutcome) string { return o.Repo }

// OutcomeModel groups outcomes by model for AggregateOutcomes.
func OutcomeModel(o TaskOutcome) string { return o.Model }

// AggregateOutcomes sums outcomes per group(o), sorted by key.
func AggregateOutcomes(outcomes []TaskOutcome, group func(TaskOutcome) string) []OutcomeSummary {
	byKey := make(map[string]*OutcomeSummary)
	for _, o := range outcomes {
		k := group(o)
		if byKey[k] == nil {
			byKey[k] = &OutcomeSummary{Key: k}
		}
		byKey[k].Add(o)
	}
	sums := make([]OutcomeSummary, 0, len(byKey))
	for _, s := range byKey {
		sums = append(sums, *s)
	}
	slices.SortFunc(sums, func(a, b OutcomeSummary) int { return cmp.Compare(a.Key, b.Key) })
	return sums
}
