package app

import (
	"cmp"
	"math"
	"slices"
)

// Choosing a model by outcome compares groups of a few dozen tasks, often
// fewer, so every rate comes with a 95% confidence interval: a model that
// merged 2 of 3 is not shown as better than one that merged 30 of 50.
// Proportions use the Wilson score interval, which stays inside [0, 1] and
// is honest at 0 and n successes, where the normal approximation collapses
// to a point. Mean survival is a mean of per-pull-request shares, and uses
// Student's t interval, clipped to [0, 1].

// Confidence is the level of every interval here.
const Confidence = 0.95

// z95 is the standard normal quantile of 0.975: a two-sided 95% interval
// spans z95 standard errors each way.
const z95 = 1.959963984540054

// t95 are Student's t quantiles of 0.975 for 1 to 30 degrees of freedom.
// The statistics come from a table and an expansion rather than a
// numerical library, which would link linear algebra into every binary
// that imports the domain, the webhook intake included.
var t95 = [...]float64{
	12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836,
	2.446911851, 2.364624252, 2.306004135, 2.262157163, 2.228138852,
	2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546,
	2.119905299, 2.109815578, 2.100922040, 2.093024054, 2.085963447,
	2.079613845, 2.073873068, 2.068657610, 2.063898562, 2.059538553,
	2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
}

// tQuantile95 is Student's t quantile of 0.975 with df degrees of
// freedom: from the table up to 30, beyond it the Cornish-Fisher
// expansion around z95, within 1e-5 there.
func tQuantile95(df int) float64 {
	if df <= len(t95) {
		return t95[df-1]
	}
	z, n := z95, float64(df)
	return z + (z*z*z+z)/(4*n) + (5*math.Pow(z, 5)+16*z*z*z+3*z)/(96*n*n) +
		(3*math.Pow(z, 7)+19*math.Pow(z, 5)+17*z*z*z-15*z)/(384*n*n*n)
}

// Interval is a two-sided confidence interval at level Confidence. The
// zero Interval, with N 0, says there was nothing to measure.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	N    int     `json:"n"` // the observations it rests on
}

// WilsonInterval is the Wilson score interval of k successes in n trials.
// n 0 gives the zero Interval; k outside [0, n] is clamped into it.
func WilsonInterval(k, n int) Interval {
	if n <= 0 {
		return Interval{}
	}
	k = min(max(k, 0), n)
	z := z95
	nf, p := float64(n), float64(k)/float64(n)
	centre := (p + z*z/(2*nf)) / (1 + z*z/nf)
	half := z / (1 + z*z/nf) * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	// Rounding must not push the bounds past what was observed.
	return Interval{Low: max(0, min(p, centre-half)), High: min(1, max(p, centre+half)), N: n}
}

// MeanInterval is the mean of xs, each in [0, 1], with Student's t
// interval clipped to [0, 1]. One observation says nothing of the spread:
// its interval is all of [0, 1]. No observations give 0 and the zero
// Interval.
func MeanInterval(xs []float64) (float64, Interval) {
	switch len(xs) {
	case 0:
		return 0, Interval{}
	case 1:
		return xs[0], Interval{Low: 0, High: 1, N: 1}
	}
	n := float64(len(xs))
	var sum, squares float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	for _, x := range xs {
		squares += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(squares / (n - 1))
	half := tQuantile95(len(xs)-1) * sd / math.Sqrt(n)
	return mean, Interval{Low: max(0, mean-half), High: min(1, mean+half), N: len(xs)}
}

// OutcomeStats is how a group of tasks (one model's, one repository's)
// turned out, as an operator compares models: how often they succeeded
// and were merged, how much of their work survived review, how often it
// was reverted or stepped out of bounds, and what each merge cost.
type OutcomeStats struct {
	Key       string   `json:"key"`
	Tasks     int      `json:"tasks"`
	Succeeded int      `json:"succeeded"`
	Success   Interval `json:"success_ci"` // Succeeded of Tasks
	Merged    int      `json:"merged"`
	MergeRate Interval `json:"merge_ci"` // Merged of Tasks
	// MeanSurvival is the mean over merged pull requests whose survival
	// was measured of the share of the agent's changed lines kept at
	// merge; each pull request counts once, whatever its size.
	MeanSurvival float64  `json:"mean_survival"`
	Survival     Interval `json:"survival_ci"` // N: merges measured
	Reverted     int      `json:"reverted"`
	RevertRate   Interval `json:"revert_ci"` // Reverted of Merged
	// SafetyIncidents counts every incident; TasksWithIncidents the tasks
	// that had any, whose share of Tasks is Incidents.
	SafetyIncidents    int      `json:"safety_incidents"`
	TasksWithIncidents int      `json:"tasks_with_incidents"`
	Incidents          Interval `json:"incident_ci"`
	Cost               float64  `json:"cost_usd"`
	// CostPerMerged is everything the group spent, failures included,
	// divided by its merged pull requests; 0 without merges.
	CostPerMerged float64 `json:"cost_per_merged_usd"`
}

// OutcomeStatsBy works out OutcomeStats per group(o), sorted by key.
func OutcomeStatsBy(outcomes []TaskOutcome, group func(TaskOutcome) string) []OutcomeStats {
	type acc struct {
		s        OutcomeStats
		survival []float64
	}
	byKey := make(map[string]*acc)
	for _, o := range outcomes {
		k := group(o)
		a := byKey[k]
		if a == nil {
			a = &acc{s: OutcomeStats{Key: k}}
			byKey[k] = a
		}
		a.s.Tasks++
		if o.Succeeded() {
			a.s.Succeeded++
		}
		a.s.Cost += o.Cost
		a.s.SafetyIncidents += o.SafetyIncidents
		if o.SafetyIncidents > 0 {
			a.s.TasksWithIncidents++
		}
		if !o.Merged {
			continue
		}
		a.s.Merged++
		if o.Reverted {
			a.s.Reverted++
		}
		if o.Survival != nil {
			a.survival = append(a.survival, o.Survival.Share())
		}
	}
	out := make([]OutcomeStats, 0, len(byKey))
	for _, a := range byKey {
		s := a.s
		s.Success = WilsonInterval(s.Succeeded, s.Tasks)
		s.MergeRate = WilsonInterval(s.Merged, s.Tasks)
		s.RevertRate = WilsonInterval(s.Reverted, s.Merged)
		s.Incidents = WilsonInterval(s.TasksWithIncidents, s.Tasks)
		s.MeanSurvival, s.Survival = MeanInterval(a.survival)
		s.CostPerMerged = ratio(s.Cost, s.Merged)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b OutcomeStats) int { return cmp.Compare(a.Key, b.Key) })
	return out
}
