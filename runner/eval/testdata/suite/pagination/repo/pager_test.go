package pager

import (
	"slices"
	"testing"
)

func TestPage(t *testing.T) {
	items := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		n    int
		want []string
	}{
		{1, []string{"a", "b"}},
		{2, []string{"c", "d"}},
		{3, []string{"e"}},
		{4, nil},
	}
	for _, tt := range tests {
		if got := Page(items, tt.n, 2); !slices.Equal(got, tt.want) {
			t.Errorf("Page(items, %d, 2) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
