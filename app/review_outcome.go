package app

import (
	"cmp"
	"slices"
)

// ReviewOutcome is what a review found, kept with its TaskOutcome; a
// task outcome with one is a review's, counted apart from fixes.
type ReviewOutcome struct {
	Findings int `json:"findings"` // reported by the model and accepted
	Proven   int `json:"proven"`   // whose test failed on the head and passed on the base
	Posted   int `json:"posted"`   // posted, inline or in the review's body
	// Resolved counts findings whose thread a later commit resolved: the
	// reviewer's "useful" signal. Dismissed counts findings dismissed.
	Resolved  int `json:"resolved,omitempty"`
	Dismissed int `json:"dismissed,omitempty"`
}

// SplitReviews separates reviews' outcomes from the other tasks'.
func SplitReviews(all []TaskOutcome) (tasks, reviews []TaskOutcome) {
	for _, o := range all {
		if o.Review != nil {
			reviews = append(reviews, o)
		} else {
			tasks = append(tasks, o)
		}
	}
	return tasks, reviews
}

// ReviewSummary adds up the reviews of one repository ("" for all).
type ReviewSummary struct {
	Key     string `json:"key"`
	Reviews int    `json:"reviews"`
	ReviewOutcome
	Cost float64 `json:"cost_usd"`
}

// SummarizeReviews adds up reviews per repository, sorted by name, then
// all of them under the key "".
func SummarizeReviews(reviews []TaskOutcome) []ReviewSummary {
	by := map[string]*ReviewSummary{}
	var all ReviewSummary
	for _, o := range reviews {
		s := by[o.Repo]
		if s == nil {
			s = &ReviewSummary{Key: o.Repo}
			by[o.Repo] = s
		}
		for _, s := range []*ReviewSummary{s, &all} {
			s.Reviews++
			s.Findings += o.Review.Findings
			s.Proven += o.Review.Proven
			s.Posted += o.Review.Posted
			s.Resolved += o.Review.Resolved
			s.Dismissed += o.Review.Dismissed
			s.Cost += o.Cost
		}
	}
	out := make([]ReviewSummary, 0, len(by)+1)
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ReviewSummary) int { return cmp.Compare(a.Key, b.Key) })
	if all.Reviews > 0 {
		out = append(out, all)
	}
	return out
}
