package text

import (
	"fmt"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/change"
)

// reproduction is the reproduction as a section of the pull request's
// body, or "" when none was tried.
func reproduction(r Report) string {
	rp := r.Reproduction
	if rp == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\n## Reproduction\n\n")
	if !rp.Reproduced {
		fmt.Fprintf(&b, "⚠️ **Not reproduced: the fix is unproven.** %s. The checks pass with the change, "+
			"but no test shows that it fixes the problem; check that by hand before merging.\n", capitalize(rp.Why))
		b.WriteString(unsure(rp))
		return b.String()
	}
	c := rp.Run.Checks[len(rp.Run.Checks)-1]
	head := "the change"
	if r.Pushed != "" {
		head = "`" + ShortSHA(r.Pushed) + "`"
	}
	result := bare(resultCell(c))
	if rp.Existing {
		fmt.Fprintf(&b, "✅ **Reproduced by an existing test:** %s %s on `%s` before any change (check **%s**, %s: %s), and %s on %s in the final verification.\n\n",
			testList(rp), plural(rp, "fails", "fail"), ShortSHA(rp.Base), c.Name, app.CodeSpan(c.Run, app.IssueRef{}), result,
			plural(rp, "passes", "pass"), head)
		b.WriteString("The change adds or changes no test. The checks ran on the base commit before the agent started, in a sandbox of its own.\n\n")
	} else {
		fmt.Fprintf(&b, "✅ **Reproduced:** %s %s on `%s` (check **%s**, %s: %s; output below), and %s on %s in the final verification.\n\n",
			testList(rp), plural(rp, "fails", "fail"), ShortSHA(rp.Base), c.Name, app.CodeSpan(c.Run, app.IssueRef{}), result,
			plural(rp, "passes", "pass"), head)
		fmt.Fprintf(&b, "The tests ran on the base commit's tree with only the new and changed test files laid over it (%s), in a fresh sandbox.\n\n",
			codeList(rp.Files))
	}
	b.WriteString(unsure(rp))
	if strings.TrimSpace(c.Output) == "" {
		fmt.Fprintf(&b, "**%s** printed nothing on %s.\n", c.Name, ShortSHA(rp.Base))
		return b.String()
	}
	fmt.Fprintf(&b, "<details><summary>%s on %s</summary>\n\n%s\n</details>\n",
		c.Name, ShortSHA(rp.Base), app.CodeBlock(change.Tail(c.Output, reproductionExcerpt), "", r.Own()))
	return b.String()
}

// unsure says which files leave the changed tests unsure, and why, as a
// paragraph, or "".
func unsure(rp *change.Reproduction) string {
	if len(rp.Unsure) == 0 {
		return ""
	}
	return "Which tests the change touches is not certain: " + app.Inert(oneLine(strings.Join(rp.Unsure, "; ")), app.IssueRef{}) + ".\n\n"
}

// testList names what reproduces: the tests, or else the test files, or
// else the tests of an existing check whose output names none.
func testList(rp *change.Reproduction) string {
	switch {
	case len(rp.Tests) > 0:
		return codeList(rp.Tests)
	case len(rp.Files) > 0:
		return "the tests in " + codeList(rp.Files)
	}
	return "the existing tests"
}

// plural picks the verb for testList's subject.
func plural(rp *change.Reproduction, one, many string) string {
	if len(rp.Tests) == 1 {
		return one
	}
	return many
}
