package webhook

import (
	"errors"
	"testing"
)

// takeAll takes pieces for peer until the budget refuses one, and returns
// the bytes taken and the refusal.
func takeAll(b *byteBudget, peer string, head bool) (int64, error) {
	var n int64
	for {
		if err := b.take(peer, chunkSize, head); err != nil {
			return n, err
		}
		n += chunkSize
	}
}

// TestByteBudgetShares holds the budget from several peers: each holds at
// most half of what the others leave, a peer's heads go beyond that by a
// sixteenth of the budget while an eighth stays free, only bytes beyond
// the whole budget are errBusy, and what is given back leaves nothing.
func TestByteBudgetShares(t *testing.T) {
	t.Parallel()
	const limit = DefaultBodyBudget
	var gauge int64
	b := newByteBudget(limit, func(d int64) { gauge += d })
	steps := []struct {
		peer string
		head bool
		want int64
	}{
		{"a", false, limit / 2},  // alone: half
		{"b", false, limit / 4},  // half of what a leaves
		{"a", true, limit / 16},  // a's heads, beyond its share
		{"b", true, limit / 16},  // until an eighth is left
		{"c", false, limit / 16}, // half of that eighth
		{"c", true, 0},           // past the last eighth: no head beyond
	}
	taken := map[string]int64{}
	for _, s := range steps {
		n, err := takeAll(b, s.peer, s.head)
		if n != s.want || !errors.Is(err, errPeerShare) {
			t.Errorf("peer %s (head %v): took %d MiB, %v; want %d MiB then errPeerShare", s.peer, s.head, n>>20, err, s.want>>20)
		}
		taken[s.peer] += n
	}
	b.force(limit)
	if err := b.take("d", chunkSize, true); !errors.Is(err, errBusy) {
		t.Errorf("over the whole budget: %v; want errBusy", err)
	}
	b.give("a", taken["a"], limit/16, limit)
	b.give("b", taken["b"], limit/16, 0)
	b.give("c", taken["c"], 0, 0)
	if b.used != 0 || len(b.peers) != 0 || gauge != 0 {
		t.Errorf("all given back: used %d, %d peers, gauge %d; want none", b.used, len(b.peers), gauge)
	}
}

func TestPeerOf(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"192.0.2.7:443":                "192.0.2.7",
		"[::ffff:192.0.2.7]:443":       "192.0.2.7",
		"[2001:db8:1:2:3:4:5:6]:443":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff:ff:ff:ff]:1": "2001:db8:1:2::/64",
		"@":                            "@",
	} {
		if got := peerOf(addr); got != want {
			t.Errorf("peerOf(%q) = %q; want %q", addr, got, want)
		}
	}
}
