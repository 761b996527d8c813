package sandboxtest

import (
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// PlantGitTraps has the container plant, in its work tree, everything that
// would make a careless host run code when it runs git over that tree: a
// .git directory whose config sets core.fsmonitor, filters, a textconv
// driver, a pager, an editor, credential and ssh helpers, and executable
// hooks; and a .gitattributes that applies the filters to every file. Each
// trap, if it fires, creates marker — a path on the host — so a test proves
// the host safe by checking that marker never appears.
//
// It also plants symlinks that lead out of the tree: "passwd" to /etc/passwd
// and "up" to ../../, which host-side file access must refuse to follow.
func PlantGitTraps(t testing.TB, c sandbox.Box, marker string) {
	t.Helper()
	script := `set -e
fire="touch '` + marker + `'"
git init -q .
git config core.fsmonitor "$fire; echo"
git config filter.trap.clean "$fire; cat"
git config filter.trap.smudge "$fire; cat"
git config filter.trap.required true
git config diff.trap.textconv "$fire; cat"
git config core.pager "$fire; cat"
git config core.editor "$fire; true"
git config core.sshCommand "$fire; false"
git config credential.helper "!$fire; true"
for h in pre-commit prepare-commit-msg commit-msg post-commit post-checkout post-index-change pre-push reference-transaction pre-auto-gc; do
	printf '#!/bin/sh\n%s\n' "$fire" > .git/hooks/$h
	chmod +x .git/hooks/$h
done
echo '* filter=trap diff=trap' > .gitattributes
echo '* filter=trap diff=trap' > .git/info/attributes
ln -s /etc/passwd passwd
ln -s ../../ up
`
	res := MustRun(t, c, sandbox.Cmd{Shell: script, Timeout: time.Minute})
	if res.ExitCode != 0 {
		t.Fatalf("plant git traps: exit %d: %s", res.ExitCode, res.Stderr)
	}
}
