// Package apptest finds the GitHub material that agentbot's tests check
// against: real webhook payloads, the official signature test vector and
// GitHub's OpenAPI description, kept unmodified in a shared, read-only
// fixtures folder beside the repository (../shared/fixtures from its root).
package apptest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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

// fixtures finds the folder from the test's working directory, its
// package's: the repository's root is the nearest directory above it with
// a go.mod. Not from the source file's path, which a -trimpath build
// (make test's, whose compiled packages are cached whatever the checkout's
// directory) leaves relative.
func fixtures() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			fx := filepath.Join(dir, "..", "shared", "fixtures")
			_, err := os.Stat(fx)
			return fx, err
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = up
	}
}
