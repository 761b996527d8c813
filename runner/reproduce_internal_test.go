package runner

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/tools"
)

func TestReproductionSection(t *testing.T) {
	t.Parallel()
	tk, _ := hostileTask()
	if s := reproductionSection(tk); s != "" {
		t.Errorf("a section without a reproduction: %q", s)
	}
	tk.prog.Pushed = "feedc0ffee00112233445566778899aabbccddee"
	tk.prog.Reproduction = &Reproduction{Mode: policy.ReproducePreferred, Base: "0123456789abcdef0123456789abcdef01234567",
		Files: []string{"stats_test.go", "tests/`@mallory`fixes #99.sh"}, Tests: []string{"TestSum"}, Reproduced: true,
		Run: &Verification{Container: "c0ffee", Checks: []tools.CheckRun{
			{Name: "test", Run: "go test -run '^(TestSum)$' ./...", ExitCode: 1, Output: "--- FAIL: TestSum\n" + hostile},
		}}}
	s := reproductionSection(tk)
	for _, want := range []string{
		"✅ **Reproduced:** `TestSum` fails on `0123456` (check **test**, `go test -run '^(TestSum)$' ./...`: fail (exit 1); output below), and passes on `feedc0f` in the final verification.",
		"--- FAIL: TestSum",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the section lacks %q:\n%s", want, s)
		}
	}
	assertInert(t, "the reproduction section", s, "<summary>test on 0123456</summary>")

	tk.prog.Reproduction = &Reproduction{Mode: policy.ReproducePreferred, Base: "0123456789", Why: "the change adds or changes no test"}
	if s := reproductionSection(tk); !strings.Contains(s, "⚠️ **Not reproduced: the fix is unproven.** The change adds or changes no test.") {
		t.Errorf("an unproven fix is not said to be:\n%s", s)
	}
	if err := tk.prog.Reproduction.Refusal(); err != nil {
		t.Errorf("preferred refuses: %v", err)
	}
	tk.prog.Reproduction.Mode = policy.ReproduceRequired
	if err := tk.prog.Reproduction.Refusal(); err == nil || !strings.Contains(app.ErrorMessage(err), "The change is not reproduced: the change adds or changes no test.") {
		t.Errorf("required and not reproduced: %v", err)
	}
}
