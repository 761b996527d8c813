package stats

import "testing"

func TestSum(t *testing.T) {
	tests := []struct {
		xs   []int
		want int
	}{
		{nil, 0},
		{[]int{5}, 5},
		{[]int{1, 2, 3}, 6},
		{[]int{-4, 4, 10}, 10},
	}
	for _, tt := range tests {
		if got := Sum(tt.xs); got != tt.want {
			t.Errorf("Sum(%v) = %d; want %d", tt.xs, got, tt.want)
		}
	}
}

func TestMean(t *testing.T) {
	if got := Mean([]int{2, 4, 6}); got != 4 {
		t.Errorf("Mean(2, 4, 6) = %v; want 4", got)
	}
}
