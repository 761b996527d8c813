package pager

import "testing"

func TestCountHidden(t *testing.T) {
	tests := []struct{ total, size, want int }{
		{0, 10, 0},
		{1, 10, 1},
		{10, 10, 1},
		{11, 10, 2},
		{20, 10, 2},
		{7, 3, 3},
	}
	for _, tt := range tests {
		if got := Count(tt.total, tt.size); got != tt.want {
			t.Errorf("Count(%d, %d) = %d, want %d", tt.total, tt.size, got, tt.want)
		}
	}
	if got := Page([]string{"a", "b", "c", "d", "e", "f", "g"}, 3, 3); len(got) != 1 || got[0] != "g" {
		t.Errorf("page 3 of 7 items by 3 = %q, want [g]", got)
	}
}
