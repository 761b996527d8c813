package runner

import (
	"slices"
	"testing"
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
