// Package apptest finds the GitHub material that agentbot's tests check
// against: real webhook payloads, the official signature test vector and
// GitHub's OpenAPI description, kept unmodified in a shared, read-only
// fixtures folder beside the repository (../shared/fixtures from its root).
package apptest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
)

// Fixtures returns the fixtures folder. Where it is missing the test is
// skipped, except under CI=true, where that is a failure: CI always has it.
func Fixtures(t testing.TB) string {
	t.Helper()
	dir, err := fixtures()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("GitHub fixtures: %v", err)
		}
		t.Skipf("GitHub fixtures are not beside the repository: %v", err)
	}
	return dir
}

// fixtures is ../shared/fixtures from the module's root.
func fixtures() (string, error) {
	root, err := ostest.ModuleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "..", "shared", "fixtures")
	_, err = os.Stat(dir)
	return dir, err
}
