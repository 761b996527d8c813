package runner

import (
	"slices"
	"testing"
)

func TestPlanFilesAreTheFilesSection(t *testing.T) {
	text := "## Change\n\nEdit `stats.go`.\n\n## Files\n\n- `stats.go`\n* `stats_test.go` (new)\n- `stats.go`\n\n## Checks\n\n- `fixed`\n"
	if got := planFiles(text); !slices.Equal(got, []string{"stats.go", "stats_test.go"}) {
		t.Errorf("planFiles = %q; want the two files of the Files section, once each", got)
	}
}
