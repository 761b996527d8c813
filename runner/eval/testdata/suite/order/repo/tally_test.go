package tally

import "testing"

func TestReport(t *testing.T) {
	got := Report(Count("b a c b c b d"))
	want := "b 3\nc 2\na 1\nd 1\n"
	if got != want {
		t.Errorf("Report = %q, want %q", got, want)
	}
}
