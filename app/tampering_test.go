package app_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
)

func TestTamperingMarkdown(t *testing.T) {
	if got := (app.Tampering{}).Markdown(); got != "" {
		t.Errorf("empty report renders %q", got)
	}
	tm := app.Tampering{Files: []app.TamperedFile{
		{Path: "a|b`c_test.go", Kinds: []app.TamperKind{app.TamperTest}, Added: 1, Removed: 9,
			RemovedTests: []string{"TestX"}, AddedSkips: []string{"t.Skip(\"`x`\")"}},
		{Path: ".github/workflows/ci.yml", Kinds: []app.TamperKind{app.TamperCI}, Removed: 4, Deleted: true},
	}}
	md := tm.Markdown()
	for _, want := range []string{
		"| ``a\\|b`c_test.go`` | test | +1 −9 |",
		"| `.github/workflows/ci.yml` | CI | +0 −4 (deleted) |",
		"test removed: `TestX` in ``a|b`c_test.go``",
		"skip added in ``a|b`c_test.go``: ``t.Skip(\"`x`\")``",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
