package invoice

import "testing"

func TestCentsHidden(t *testing.T) {
	tests := []struct {
		dollars float64
		want    int64
	}{
		{0.57, 57},
		{4.35, 435},
		{19.99, 1999},
		{-0.29, -29},
		{-4.35, -435},
		{0.004, 0},
		{0.006, 1},
	}
	for _, tt := range tests {
		if got := Cents(tt.dollars); got != tt.want {
			t.Errorf("Cents(%v) = %d, want %d", tt.dollars, got, tt.want)
		}
	}
}
