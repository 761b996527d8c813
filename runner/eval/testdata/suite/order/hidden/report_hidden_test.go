package tally

import "testing"

func TestReportOrderHidden(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", ""},
		{"z y x", "x 1\ny 1\nz 1\n"},
		{"q p q p r", "p 2\nq 2\nr 1\n"},
		{"one two two three three three", "three 3\ntwo 2\none 1\n"},
	}
	for _, tt := range tests {
		for range 20 { // map order varies from call to call
			if got := Report(Count(tt.text)); got != tt.want {
				t.Fatalf("Report(Count(%q)) = %q, want %q", tt.text, got, tt.want)
			}
		}
	}
}
