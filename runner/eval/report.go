package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Report is a suite's results, per task and in total.
type Report struct {
	Suite string       `json:"suite"`
	Runs  int          `json:"runs"` // of each task
	Tasks []TaskReport `json:"tasks"`
	Total Summary      `json:"total"`
}

// TaskReport is one task's runs and their summary.
type TaskReport struct {
	Task string `json:"task"`
	Summary
	Results []Result `json:"results"`
}

// Summary aggregates runs. Rates are fractions of the runs; means are over
// every run, failed ones included, since a model that gives up early is
// cheap for a reason.
type Summary struct {
	Runs   int `json:"runs"`
	Solved int `json:"solved"`
	// HiddenRuns counts the runs of tasks that have hidden tests, and
	// HiddenPassed those that were solved and passed them.
	HiddenRuns     int     `json:"hidden_runs"`
	HiddenPassed   int     `json:"hidden_passed"`
	SuccessRate    float64 `json:"success_rate"`
	HiddenRate     float64 `json:"hidden_rate"`
	MeanIterations float64 `json:"mean_iterations"`
	MeanTokens     float64 `json:"mean_tokens"`
	MeanCostUSD    float64 `json:"mean_cost_usd"`
	MeanSeconds    float64 `json:"mean_seconds"`
}

func newReport(s *Suite, runs int, results []Result) *Report {
	rep := &Report{Suite: s.Dir, Runs: runs, Total: summarize(results)}
	for _, t := range s.Tasks {
		var mine []Result
		for _, r := range results {
			if r.Task == t.Name {
				mine = append(mine, r)
			}
		}
		rep.Tasks = append(rep.Tasks, TaskReport{Task: t.Name, Summary: summarize(mine), Results: mine})
	}
	return rep
}

func summarize(results []Result) Summary {
	var s Summary
	var iterations, tokens int64
	var cost, seconds float64
	for _, r := range results {
		s.Runs++
		if r.Solved {
			s.Solved++
		}
		if r.Hidden != HiddenNone {
			s.HiddenRuns++
		}
		if r.Hidden == HiddenPass {
			s.HiddenPassed++
		}
		iterations += int64(r.Iterations)
		tokens += r.Tokens
		cost += r.CostUSD
		seconds += r.Seconds
	}
	if s.Runs == 0 {
		return s
	}
	n := float64(s.Runs)
	s.SuccessRate = float64(s.Solved) / n
	if s.HiddenRuns > 0 {
		s.HiddenRate = float64(s.HiddenPassed) / float64(s.HiddenRuns)
	}
	s.MeanIterations, s.MeanTokens = float64(iterations)/n, float64(tokens)/n
	s.MeanCostUSD, s.MeanSeconds = cost/n, seconds/n
	return s
}

// Passed says whether every run was solved and passed its hidden tests.
func (r *Report) Passed() bool {
	return r.Total.Solved == r.Total.Runs && r.Total.HiddenPassed == r.Total.HiddenRuns
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes a table of the tasks and the total, then what went
// wrong in the runs that failed. Iterations, tokens, cost and time are
// means per run.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "task\truns\tsolved\thidden\titerations\ttokens\tcost\ttime")
	row := func(name string, s Summary) {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.1f\t%.0f\t$%.4f\t%.1fs\n", name, s.Runs,
			ratio(s.Solved, s.Runs), ratio(s.HiddenPassed, s.HiddenRuns), s.MeanIterations, s.MeanTokens, s.MeanCostUSD, s.MeanSeconds)
	}
	for _, t := range r.Tasks {
		row(t.Task, t.Summary)
	}
	row("total", r.Total)
	if err := tw.Flush(); err != nil {
		return err
	}
	var failures []string
	for _, t := range r.Tasks {
		for _, res := range t.Results {
			failures = append(failures, res.failure()...)
		}
	}
	if len(failures) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(failures, "\n"))
	}
	line := "solved " + percent(r.Total.Solved, r.Total.Runs) + " of runs"
	if r.Total.HiddenRuns > 0 {
		line += "; hidden tests passed in " + percent(r.Total.HiddenPassed, r.Total.HiddenRuns)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", line)
	return err
}

// failure says what went wrong in a run, a line or a few; nothing when it
// went right.
func (r Result) failure() []string {
	name := fmt.Sprintf("%s run %d:", r.Task, r.Run)
	var lines []string
	switch {
	case r.Error != "":
		lines = append(lines, fmt.Sprintf("%s %s", name, r.Error))
	case !r.Solved:
		lines = append(lines, fmt.Sprintf("%s not solved: %s", name, r.Stop))
	}
	for _, h := range r.HiddenRuns {
		if h.Passed {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s hidden %q failed with exit %d:", name, h.Run, h.ExitCode))
		for l := range strings.Lines(strings.TrimRight(h.Output, "\n")) {
			lines = append(lines, "    "+strings.TrimRight(l, "\n"))
		}
	}
	return lines
}

func ratio(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", n, of)
}

func percent(n, of int) string {
	return fmt.Sprintf("%d%% (%d/%d)", n*100/of, n, of)
}
