// Package prompts holds the text the model reads: the system prompt, the
// task with the repository's context, and the instruction for digesting old
// tool output. The texts are text/template files embedded in the binary and
// rendered by typed functions, so a template and the data it needs change
// together and a test renders each one.
//
// A repository's own instructions for agents (AGENTS.md and the like) are
// shown to the model as guidance, quoted and capped, and never widen what the
// policy allows: the tools enforce the policy whatever the prompt says.
package prompts

import (
	"embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

//go:embed *.tmpl
var files embed.FS

// templates is parsed once; it is read-only after that.
var templates = template.Must(template.New("").Funcs(template.FuncMap{
	"join": strings.Join,
}).Option("missingkey=error").ParseFS(files, "*.tmpl"))

// SystemData is what the system prompt states: the rules of the task.
type SystemData struct {
	Checks     []policy.Check
	Paths      policy.Paths
	Limits     policy.Limits
	ShellAllow []string // commands run_command accepts; empty when shell is off or unrestricted
	ShellOff   bool
	// Reproduce asks for a test that shows the problem before the fix:
	// the host runs the new and changed tests on the base commit, where
	// they must fail.
	Reproduce bool
}

// System renders the system prompt.
func System(d SystemData) (string, error) { return render("system.tmpl", d) }

// AskData is what the system prompt of a question states.
type AskData struct {
	Limits policy.Limits
}

// Ask renders the system prompt of /agent ask and /agent explain: read,
// cite, answer; nothing is changed.
func Ask(d AskData) (string, error) { return render("ask.tmpl", d) }

// TaskData is the first user message: what is asked and where.
type TaskData struct {
	Repo  string // owner/name, or a local directory for agentbot run
	Title string // issue or pull request title
	Body  string // issue or pull request body, when there is no Thread
	// Thread is the or pull request's conversation, as shown to
	// the model (app.BuildThread); nil outside GitHub.
	Thread       *app.Thread
	Instructions string // the command's own words
	Review       *app.ReviewComment
	Context      Repo
}

// Task renders the task message.
func Task(d TaskData) (string, error) { return render("task.tmpl", d) }

// OutsidersTitle is the title as data, on one line and unable to end its
// frame, when the thread says its author may not command agentbot; ""
// when the title is the heading of the task (its author may command, or
// there is no thread: the title is the local user's own).
func (d TaskData) OutsidersTitle() string {
	if d.Thread == nil || d.Thread.AuthorMayCommand || strings.TrimSpace(d.Title) == "" {
		return ""
	}
	return titleTag.ReplaceAllString(strings.Join(strings.Fields(d.Title), " "), "&lt;$1")
}

// titleTag is the tag that frames an outsider's title, in any case.
var titleTag = regexp.MustCompile(`(?i)<(/?title)`)

// DigestData is one old tool result to be summarised by the fast model.
type DigestData struct {
	Tool   string
	Target string
	Output string
}

// Digest renders the instruction that asks the fast model for a digest.
func Digest(d DigestData) (string, error) { return render("digest.tmpl", d) }

func render(name string, data any) (string, error) {
	var sb strings.Builder
	if err := templates.ExecuteTemplate(&sb, name, data); err != nil {
		return "", fmt.Errorf("render prompt %s: %w", name, err)
	}
	return sb.String(), nil
}
