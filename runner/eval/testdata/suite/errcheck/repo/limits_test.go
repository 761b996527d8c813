package limits

import "testing"

func TestParse(t *testing.T) {
	got, err := Parse("# limits\nworkers = 8\n\nqueue=100\n")
	if err != nil {
		t.Fatal(err)
	}
	if got["workers"] != 8 || got["queue"] != 100 || len(got) != 2 {
		t.Errorf("Parse = %v, want workers 8 and queue 100", got)
	}
}

func TestParseRefusesATypo(t *testing.T) {
	if got, err := Parse("workers=1O\n"); err == nil {
		t.Errorf("Parse(workers=1O) = %v, want an error", got)
	}
}
