package change

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/agent"
)

func TestRankAttempts(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cands []candidate
		order []int // attempts, best first
		why   string
	}{
		{"none", nil, nil, ""},
		{"one", []candidate{{n: 2, lines: 90}}, []int{2}, "it is the only one that passed"},
		{"a reproduced fix wins over a smaller one",
			[]candidate{{n: 1, lines: 3, files: 1}, {n: 2, reproduced: true, lines: 40, files: 3}}, []int{2, 1},
			"a test reproduces its fix and none reproduces attempt 1's"},
		{"fewer lines",
			[]candidate{{n: 1, lines: 40, files: 2}, {n: 2, lines: 9, files: 1}, {n: 3, lines: 3, files: 1}}, []int{3, 2, 1},
			"it changes 3 lines against attempt 2's 9"},
		{"then fewer files",
			[]candidate{{n: 1, lines: 6, files: 3}, {n: 2, lines: 6, files: 2}}, []int{2, 1},
			"it changes 2 files against attempt 1's 3"},
		{"then no tampering",
			[]candidate{{n: 1, lines: 6, files: 2, tampered: true, tokens: 10}, {n: 2, lines: 6, files: 2, tokens: 900}}, []int{2, 1},
			"it leaves tests and configuration alone, and attempt 1 does not"},
		{"then fewer tokens",
			[]candidate{{n: 1, lines: 6, files: 2, tokens: 900}, {n: 2, lines: 6, files: 2, tokens: 300}}, []int{2, 1},
			"it took 300 tokens against attempt 1's 900"},
		{"a tie goes to the earlier attempt",
			[]candidate{{n: 1, lines: 6, files: 2, tokens: 300}, {n: 2, lines: 6, files: 2, tokens: 300}}, []int{1, 2},
			"it ties with attempt 2 on every count and ran first"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ranked := rank(tt.cands)
			var order []int
			for _, c := range ranked {
				order = append(order, c.n)
			}
			if !slices.Equal(order, tt.order) {
				t.Errorf("rank = %v, want %v", order, tt.order)
			}
			if why := whyWon(ranked); why != tt.why {
				t.Errorf("whyWon = %q, want %q", why, tt.why)
			}
		})
	}
}

func TestAttemptPolicy(t *testing.T) {
	limits := policy.Limits{Iterations: 30, Tokens: 900_000, CostUSD: 10, WallClock: time.Hour, Attempts: 3}
	for _, tt := range []struct {
		name  string
		model policy.Models
		want  []string // each attempt's model and temperature
	}{
		{"one model", policy.Models{Edit: "gpt-4.1"}, []string{"gpt-4.1 default", "gpt-4.1 default", "gpt-4.1 default"}},
		{"models in turn", policy.Models{Edit: "gpt-4.1", Attempts: []string{"gpt-4.1", "o4-mini"}},
			[]string{"gpt-4.1 default", "o4-mini default", "gpt-4.1 default"}},
		{"one temperature", policy.Models{Edit: "gpt-4.1", Temperature: new(0.2)}, []string{"gpt-4.1 0.2", "gpt-4.1 0.2", "gpt-4.1 0.2"}},
		{"temperatures in turn, over the one", policy.Models{Edit: "gpt-4.1", Attempts: []string{"gpt-4.1", "o4-mini"}, Temperature: new(0.2), Temperatures: []float64{0, 0.7}},
			[]string{"gpt-4.1 0", "o4-mini 0.7", "gpt-4.1 0"}},
	} {
		p := policy.Policy{Model: tt.model, Limits: limits}
		var got []string
		for i := range 3 {
			a := AttemptPolicy(p, i, 3)
			temp := "default"
			if a.Model.Temperature != nil {
				temp = fmt.Sprint(*a.Model.Temperature)
			}
			got = append(got, a.Model.Edit+" "+temp)
			if l := a.Limits; l.Iterations != 30 || l.WallClock != time.Hour || l.Tokens != 300_000 || l.CostUSD != 10 {
				t.Errorf("%s: attempt %d's limits: %+v; want the whole iterations, wall clock and cost, a third of the tokens", tt.name, i, l)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: attempts %q, want %q", tt.name, got, tt.want)
		}
	}
	// A task of one attempt keeps its policy, but for a first model and
	// temperature named.
	p := policy.Policy{Model: policy.Models{Edit: "gpt-4.1", Temperature: new(0.2)}, Limits: limits}
	if a := AttemptPolicy(p, 0, 1); a.Model.Edit != "gpt-4.1" || *a.Model.Temperature != 0.2 || a.Limits != p.Limits {
		t.Errorf("one attempt: %+v %+v; want the policy as it is", a.Model, a.Limits)
	}
}

// TestDraftPrefersAVerifiedChange: when no attempt passed and the policy
// asks for drafts, the first change the gate passed and the verification
// failed is the draft, else the first loop that failed with a change;
// without drafts, or with neither, there is none.
func TestDraftPrefersAVerifiedChange(t *testing.T) {
	t.Parallel()
	failedLoop := func(diff string) Attempt {
		return Attempt{Loop: &agent.State{Status: app.StateFailed, Stop: &agent.Stop{Reason: "iterations"}, Diff: diff},
			Ended: &Ended{Step: StepLoop, State: app.StateFailed}}
	}
	unverified := Attempt{Loop: &agent.State{Status: app.StateSucceeded, Diff: "d"}, Ended: &Ended{Step: StepVerification, State: app.StateFailed}}
	refused := Attempt{Loop: &agent.State{Status: app.StateSucceeded, Diff: "d"}, Ended: &Ended{Step: StepGate, State: app.StateFailed}}
	for _, tt := range []struct {
		name  string
		draft bool
		ats   []Attempt
		want  int
	}{
		{"a verified change over an earlier loop's", true, []Attempt{failedLoop("d"), refused, unverified}, 3},
		{"else a loop's change", true, []Attempt{refused, failedLoop(""), failedLoop("d")}, 3},
		{"none that may be one", true, []Attempt{refused, failedLoop("")}, 0},
		{"no drafts asked", false, []Attempt{unverified}, 0},
	} {
		m := &making{Change: Change{Draft: tt.draft}}
		if got := m.draft(tt.ats); got != tt.want {
			t.Errorf("%s: draft = %d, want %d", tt.name, got, tt.want)
		}
	}
}
