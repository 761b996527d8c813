package app

import (
	"fmt"
	"strings"
)

// TamperKind says why a changed file is one a reviewer must look at: a
// change to it can make checks pass without fixing anything, or run code
// with the repository's secrets once merged.
type TamperKind string

// The kinds of sensitive files, in the order a report lists them.
const (
	TamperTest  TamperKind = "test"        // a test by its language's convention
	TamperCheck TamperKind = "check input" // a file a check command names or runs
	TamperCI    TamperKind = "CI"          // CI configuration, or anything under .github/
)

// TamperedFile is one changed file of a sensitive kind.
type TamperedFile struct {
	Path    string
	Kinds   []TamperKind
	Added   int // lines added
	Removed int // lines removed
	// RemovedTests names the test functions the change removes (Go
	// "func TestX", Python "def test_x", JavaScript it("…")/test("…")).
	RemovedTests []string
	// AddedSkips quotes each line the change adds that skips a test
	// (t.Skip, @pytest.mark.skip, it.skip, xit…).
	AddedSkips []string
	Deleted    bool // the change deletes the file
}

// Tampering lists every changed file that is a test, an input of a check or
// CI configuration. It is shown to reviewers in its own section of the pull
// request and of the check run: passing checks prove little when the change
// edits the checks themselves.
type Tampering struct {
	Files []TamperedFile
}

// Empty reports whether the change touches no sensitive file.
func (t Tampering) Empty() bool { return len(t.Files) == 0 }

// Markdown renders the report as a section with its own heading, or "" when
// it is empty. Paths and quoted lines come from the change, which the model
// wrote: they are shown as code spans, never as Markdown.
func (t Tampering) Markdown() string {
	if t.Empty() {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("## Tests, checks and CI changed\n\n")
	sb.WriteString("This change edits files that decide whether checks pass or what runs in CI; review them first.\n\n")
	sb.WriteString("| file | kind | lines |\n| --- | --- | --- |\n")
	for _, f := range t.Files {
		kinds := make([]string, len(f.Kinds))
		for i, k := range f.Kinds {
			kinds[i] = string(k)
		}
		lines := fmt.Sprintf("+%d −%d", f.Added, f.Removed)
		if f.Deleted {
			lines += " (deleted)"
		}
		// A table cell ends at a pipe, even inside a code span.
		fmt.Fprintf(&sb, "| %s | %s | %s |\n", strings.ReplaceAll(inlineCode(f.Path), "|", "\\|"), strings.Join(kinds, ", "), lines)
	}
	for _, f := range t.Files {
		for _, name := range f.RemovedTests {
			fmt.Fprintf(&sb, "\n- ⚠️ test removed: %s in %s", inlineCode(name), inlineCode(f.Path))
		}
		for _, line := range f.AddedSkips {
			fmt.Fprintf(&sb, "\n- ⚠️ skip added in %s: %s", inlineCode(f.Path), inlineCode(line))
		}
	}
	sb.WriteString("\n")
	return sb.String()
}

// inlineCode writes s as inline code that nothing in s can close: a fence
// longer than any run of backticks in s, and no line break.
func inlineCode(s string) string {
	s = strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
	fence := strings.Repeat("`", longestBacktickRun(s)+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
