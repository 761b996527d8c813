package text

import (
	"bytes"
	stdhtml "html"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/tools"
)

// hostile is what a hijacked model writes, or makes its code print, to act
// through the bot's texts: close other issues, notify people, and leave its
// block to forge or hide what follows.
const hostile = "All green.\nFixes #99, closes octo/other#3 and resolves: https://github.com/octo/hello/issues/98\n" +
	"cc @mallory &#64;eve\n</details>\n<!-- \n```\n"

// render turns Markdown into HTML as GitHub does, raw HTML passed through.
func render(t *testing.T, md string) string {
	t.Helper()
	var out bytes.Buffer
	if err := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe())).
		Convert([]byte(md), &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// closing is a closing keyword naming an issue the hostile text names.
var closing = regexp.MustCompile(`(?i)\b(close[sd]?|fix(e[sd])?|resolve[sd]?)(\s*:\s*|\s+)(#99|octo/other#3|https://github.com/octo/hello/issues/98)`)

// code is a code block or span in rendered HTML, where GitHub notifies
// nobody.
var code = regexp.MustCompile(`(?s)<pre>.*?</pre>|<code>.*?</code>`)

// assertInert fails when text acts on anything: it closes an issue other
// than #7, mentions someone outside code, or leaves its block, so that one
// of wants, the bot's own text after it, renders no more.
func assertInert(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	if m := closing.FindString(text); m != "" {
		t.Errorf("%s closes with %q:\n%s", what, m, text)
	}
	page := render(t, text)
	prose := stdhtml.UnescapeString(code.ReplaceAllString(page, ""))
	for _, bad := range []string{"@mallory", "@eve"} {
		if strings.Contains(prose, bad) {
			t.Errorf("%s mentions %s:\n%s", what, bad, page)
		}
	}
	if strings.Contains(page, "<!--") || strings.Count(page, "<details>") != strings.Count(page, "</details>") {
		t.Errorf("%s renders a comment or an unbalanced details block:\n%s", what, page)
	}
	for _, w := range wants {
		if !strings.Contains(page, w) {
			t.Errorf("%s renders without %q outside the model's text:\n%s", what, w, page)
		}
	}
}

// hostileReport is a fix's report whose issue title, model text, command
// output and tool calls are all hostile.
func hostileReport() Report {
	r := Report{Request: Request{Task: &app.Task{ID: "t1", Repo: "octo/hello", Number: 7, Requester: "alice", Verb: app.VerbFix},
		Issue: app.IssueInfo{Title: "Off by one, fixes #99 @mallory <!--"}}}
	r.Loop = &agent.State{
		Summary: hostile,
		Diff:    "+" + strings.ReplaceAll(hostile, "\n", "\n+"),
		Checks:  []tools.CheckRun{{Name: "test", Run: "go test ./...", ExitCode: 1, Output: hostile}},
		Messages: []llm.Message{{Role: llm.RoleAssistant, Content: hostile,
			ToolCalls: []llm.ToolCall{{ID: "c1", Name: "run", Arguments: `{"cmd":"` + strings.ReplaceAll(hostile, "\n", `\n`) + `"}`}}}},
	}
	return r
}

func TestModelTextIsInert(t *testing.T) {
	t.Parallel()
	r := hostileReport()
	st := r.Loop

	body := Body(r)
	assertInert(t, "the pull request body", body, "<h2>Checks</h2>", "<h2>Usage</h2>")
	if !strings.Contains(body, "\nFixes #7\n") {
		t.Errorf("the pull request body no longer closes its own issue:\n%s", body)
	}

	// A commit that reaches the default branch closes what its message
	// names; a squash merge's message starts with the title.
	withLoop := func(st *agent.State) Report { c := r; c.Loop = st; return c }
	for what, text := range map[string]string{"the title": Title(withLoop(&agent.State{Summary: "Fixes #99 for @mallory"})), "the commit message": CommitMessage(r),
		"the title from the issue's": Title(withLoop(&agent.State{})), "the draft's title": DraftTitle(r)} {
		if m := closing.FindString(text); m != "" || strings.Contains(text, "@mallory") {
			t.Errorf("%s closes or mentions: %q", what, text)
		}
	}

	st.Stop = &agent.Stop{Reason: "same_failure", Detail: hostile}
	assertInert(t, "the failure comment", failedText(r, Failure{Stop: st.Stop}),
		"<summary>Partial diff</summary>", "<blockquote>\n<p>fix</p>\n</blockquote>")
	assertInert(t, "the draft's body", DraftBody(r, Failure{Stop: st.Stop}), "<strong>Draft: the checks did not pass</strong>", "<h2>Checks</h2>")

	approval := Approval(r.Request, &st.Messages[0].ToolCalls[0])
	assertInert(t, "the approval request", approval, "<code>/agent approve</code>", "<blockquote>")
	if !strings.Contains(approval, "```json\n{\n  \"cmd\": ") {
		t.Errorf("the approval request does not show the arguments as JSON:\n%s", approval)
	}

	approval = Approval(r.Request, &llm.ToolCall{Name: "run", Arguments: "{\"cmd\": \"rm -rf /\"} ```\n@mallory"})
	assertInert(t, "the approval request with invalid JSON", approval, "<code>/agent approve</code>")
	if !strings.Contains(approval, "not valid JSON") || !strings.Contains(approval, `"{\"cmd\": \"rm -rf /\"} `+"```"+`\n@mallory"`) {
		t.Errorf("invalid arguments are not shown quoted and refused:\n%s", approval)
	}
}
