package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/change"
)

// reproduceMode is the task's reproduction policy: the policy's, or its
// default for a fix of an issue or a follow-up on a pull request.
func reproduceMode(tk *task) policy.Reproduce {
	return tk.policy.Policy.ReproduceFor(followsUp(tk))
}

// followsUp says tk's change follows up on a pull request, whose
// reproduction default differs from a fix's. A fix of a review's finding
// has a test to reproduce it, as a fix of an issue is asked to have.
func followsUp(tk *task) bool {
	return tk.issue.Pull != nil && !fixesFinding(tk)
}

// traceReproduction records each check run on the base with the tests.
func traceReproduction(ctx context.Context, rep *reporter, rp Reproduction) {
	end := time.Now().UTC()
	for _, c := range rp.Run.Checks {
		rep.traceCheck(ctx, end, 0, "reproduce "+c.Name, c,
			fmt.Sprintf("%s with the new tests only, fresh sandbox %s: %s", shortSHA(rp.Base), shortID(rp.Run.Container), c.Run))
	}
}

// reproductionExcerpt bounds the output of the failing check that a pull
// request quotes; the trace keeps more.
const reproductionExcerpt = 1500

// reproductionSection is the reproduction as a section of the pull
// request's body, or "" when none was tried.
func reproductionSection(tk *task) string {
	rp := tk.prog.Reproduction
	if rp == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Reproduction\n\n")
	if !rp.Reproduced {
		fmt.Fprintf(&b, "⚠️ **Not reproduced: the fix is unproven.** %s. The checks pass with the change, "+
			"but no test shows that it fixes the problem; check that by hand before merging.\n", capitalize(rp.Why))
		b.WriteString(unsureText(rp))
		return b.String()
	}
	c := rp.Run.Checks[len(rp.Run.Checks)-1]
	head := "the change"
	if tk.prog.Pushed != "" {
		head = "`" + shortSHA(tk.prog.Pushed) + "`"
	}
	result := strings.TrimPrefix(resultText(c), "❌ ")
	if rp.Existing {
		fmt.Fprintf(&b, "✅ **Reproduced by an existing test:** %s %s on `%s` before any change (check **%s**, %s: %s), and %s on %s in the final verification.\n\n",
			testList(rp), plural(rp, "fails", "fail"), shortSHA(rp.Base), c.Name, app.CodeSpan(c.Run, app.IssueRef{}), result,
			plural(rp, "passes", "pass"), head)
		b.WriteString("The change adds or changes no test. The checks ran on the base commit before the agent started, in a sandbox of its own.\n\n")
	} else {
		fmt.Fprintf(&b, "✅ **Reproduced:** %s %s on `%s` (check **%s**, %s: %s; output below), and %s on %s in the final verification.\n\n",
			testList(rp), plural(rp, "fails", "fail"), shortSHA(rp.Base), c.Name, app.CodeSpan(c.Run, app.IssueRef{}), strings.TrimPrefix(resultText(c), "❌ "),
			plural(rp, "passes", "pass"), head)
		fmt.Fprintf(&b, "The tests ran on the base commit's tree with only the new and changed test files laid over it (%s), in a fresh sandbox.\n\n",
			codeList(rp.Files))
	}
	b.WriteString(unsureText(rp))
	if strings.TrimSpace(c.Output) == "" {
		fmt.Fprintf(&b, "**%s** printed nothing on %s.\n", c.Name, shortSHA(rp.Base))
		return b.String()
	}
	fmt.Fprintf(&b, "<details><summary>%s on %s</summary>\n\n%s\n</details>\n",
		c.Name, shortSHA(rp.Base), app.CodeBlock(change.Tail(c.Output, reproductionExcerpt), "", ownIssue(tk)))
	return b.String()
}

// unsureText says which files leave the changed tests unsure, and why,
// as a paragraph, or "".
func unsureText(rp *Reproduction) string {
	if len(rp.Unsure) == 0 {
		return ""
	}
	return "Which tests the change touches is not certain: " + app.InertPlain(strings.Join(rp.Unsure, "; "), app.IssueRef{}) + ".\n\n"
}

// testList names what reproduces: the tests, or else the test files, or
// else the tests of an existing check whose output names none.
func testList(rp *Reproduction) string {
	switch {
	case len(rp.Tests) > 0:
		return codeList(rp.Tests)
	case len(rp.Files) > 0:
		return "the tests in " + codeList(rp.Files)
	}
	return "the existing tests"
}

// plural picks the verb for testList's subject.
func plural(rp *Reproduction, one, many string) string {
	if len(rp.Tests) == 1 {
		return one
	}
	return many
}

func codeList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = app.CodeSpan(n, app.IssueRef{})
	}
	return strings.Join(quoted, ", ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// shortSHA is a commit id as a pull request shows it.
var shortSHA = change.ShortSHA
