package limits

import (
	"strings"
	"testing"
)

func TestParseErrorsHidden(t *testing.T) {
	for _, text := range []string{
		"queue=100\n\nworkers=ten\n",
		"queue=100\n# comment\nworkers=\n",
		"queue=100\n\nworkers=2.5\n",
	} {
		_, err := Parse(text)
		if err == nil || !strings.Contains(err.Error(), "line 3") {
			t.Errorf("Parse(%q) = %v, want an error naming line 3", text, err)
		}
	}
	got, err := Parse("retries=-1\n")
	if err != nil || got["retries"] != -1 {
		t.Errorf("Parse(retries=-1) = %v, %v; want -1", got, err)
	}
}
