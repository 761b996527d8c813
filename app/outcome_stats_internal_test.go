package app

import (
	"math"
	"testing"
)

// TestTQuantile95 compares the table and the expansion beyond it with
// Student's t quantiles of 0.975 computed by gonum's stat/distuv.
func TestTQuantile95(t *testing.T) {
	for _, tc := range []struct {
		df   int
		want float64
	}{
		{1, 12.706205}, {2, 4.302653}, {10, 2.228139}, {30, 2.042272},
		{31, 2.039513}, {60, 2.000298}, {120, 1.979930}, {1000, 1.962339},
	} {
		if got := tQuantile95(tc.df); math.Abs(got-tc.want) > 1e-5 {
			t.Errorf("tQuantile95(%d) = %.6f, want %.6f", tc.df, got, tc.want)
		}
	}
}
