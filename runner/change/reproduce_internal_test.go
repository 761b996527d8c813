package change

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

func TestNarrowChecks(t *testing.T) {
	t.Parallel()
	checks := []policy.Check{
		{Name: "build", Run: "go build ./..."},
		{Name: "test", Run: "go test -count=1 ./..."},
		{Name: "spaced", Run: "  go   test ./pkg/..."},
		{Name: "own-run", Run: "go test -run TestX ./..."},
		{Name: "shell", Run: "go test ./... && make lint"},
		{Name: "quoted", Run: `go test -tags "a b" ./...`},
		{Name: "make", Run: "make test"},
	}
	got := NarrowChecks(checks, []string{"TestSum", "TestMean"})
	want := []string{
		"go build ./...",
		"go test -run '^(TestSum|TestMean)$' -count=1 ./...",
		"go test -run '^(TestSum|TestMean)$' ./pkg/...",
		"go test -run TestX ./...",
		"go test ./... && make lint",
		`go test -tags "a b" ./...`,
		"make test",
	}
	for i, c := range got {
		if c.Run != want[i] || c.Name != checks[i].Name {
			t.Errorf("%s: %q; want %q", checks[i].Name, c.Run, want[i])
		}
	}
	if checks[1].Run != "go test -count=1 ./..." {
		t.Errorf("the policy's checks were changed: %q", checks[1].Run)
	}
	if none := NarrowChecks(checks, nil); !slices.Equal(none, checks) {
		t.Errorf("checks narrowed without tests: %v", none)
	}
}

func TestReproductionRefusesOnlyWhenRequired(t *testing.T) {
	t.Parallel()
	rp := &Reproduction{Mode: policy.ReproducePreferred, Base: "0123456789", Why: "the change adds or changes no test"}
	if err := rp.Refusal(); err != nil {
		t.Errorf("preferred refuses: %v", err)
	}
	rp.Mode = policy.ReproduceRequired
	if err := rp.Refusal(); err == nil || !strings.Contains(app.ErrorMessage(err), "The change is not reproduced: the change adds or changes no test.") {
		t.Errorf("required and not reproduced: %v", err)
	}
	rp.Reproduced = true
	if err := rp.Refusal(); err != nil {
		t.Errorf("required and reproduced refuses: %v", err)
	}
}
