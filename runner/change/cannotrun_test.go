package change_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/tools"
)

// TestCannotRunOf classifies real outputs of failed checks (testdata/
// cannotrun, each captured from the command named): a cause no change to
// the code removes stops the task, with the policy line to add; anything
// the code may cause — a failing test, a missing file or module of the
// repository's own, its own server refusing — is the loop's to work on.
func TestCannotRunOf(t *testing.T) {
	t.Parallel()
	// The repository the outputs came from has these paths.
	own := func(p string) bool { return p == "mypkg" || p == "lib" || p == "stats.go" }
	for _, tt := range []struct {
		file  string // in testdata/cannotrun
		exit  int
		cause string // "" for a failure the loop works on
		fix   string
	}{
		// go test in the Go image (GOPROXY=off, no network), a module with a dependency setup did not download
		{"go-lookup-disabled.txt", 1, "a Go module the code needs is not in the sandbox's module cache", "`go mod download` to `setup.run`, with `setup.network: true`"},
		// the same with a proxy set and no network
		{"go-no-network.txt", 1, "reaches for the network", "`setup.allow_hosts`"},
		// the demo's TestSum on its base commit
		{"go-failing-test.txt", 1, "", ""},
		// a Go test whose own server is not listening
		{"go-localhost-refused.txt", 1, "", ""},
		// pytest in the python image: a dependency not installed
		{"py-dependency.txt", 2, "the Python module `requests` is not installed", "`python3 -m pip install -e .`"},
		// python3 -m pytest without pytest
		{"py-no-pytest.txt", 1, "the Python module `pytest` is not installed", "`setup.network: true`"},
		// pip with no network
		{"py-pip-no-network.txt", 1, "reaches for the network", "`setup.network: true`"},
		// pytest: a failing test; a module of the repository's own that does not exist
		{"py-failing-test.txt", 1, "", ""},
		{"py-own-module.txt", 2, "", ""},
		// node --test, require of a package not installed; an ESM import of one
		{"node-require.txt", 1, "the Node package `left-pad` is not installed", "`npm ci`"},
		{"node-esm.txt", 1, "the Node package `left-pad` is not installed", "`npm ci`"},
		// a file of the repository's own that does not exist; its own server refusing
		{"node-own.txt", 1, "", ""},
		{"node-localhost-refused.txt", 1, "", ""},
		// sh (dash) and bash without the command
		{"sh-not-found.txt", 127, "the command `pytest` is not installed", "sandbox image"},
		{"bash-not-found.txt", 127, "the command `npx` is not installed", "`setup.run`"},
		// make without the target: the repository's Makefile
		{"bash-make.txt", 2, "", ""},
	} {
		t.Run(tt.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "cannotrun", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			c := tools.CheckRun{Name: "test", Run: "the check", ExitCode: tt.exit, Output: string(out)}
			got := change.CannotRunOf(c, own)
			if tt.cause == "" {
				if got != nil {
					t.Fatalf("classified as %q (%s); want a failure the loop works on", got.Cause, got.Evidence)
				}
				return
			}
			if got == nil {
				t.Fatalf("not classified; want %q", tt.cause)
			}
			if !strings.Contains(got.Cause, tt.cause) || !strings.Contains(got.Fix, tt.fix) || got.Evidence == "" ||
				!strings.Contains(string(out), got.Evidence) || got.Check != "test" {
				t.Errorf("cause %q, fix %q, evidence %q; want %q, a fix with %q, a line of the output", got.Cause, got.Fix, got.Evidence, tt.cause, tt.fix)
			}
			// A check that passed, or ran out of time, is never one that cannot run.
			c.Passed = true
			if change.CannotRunOf(c, own) != nil {
				t.Error("a passing check was classified")
			}
		})
	}
}
