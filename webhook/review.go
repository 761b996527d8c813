package webhook

import (
	"strings"

	"github.com/agentbot/agentbot/app"
)

// reviewFollowUp decides whether a submitted review is one follow-up that
// addresses all its inline comments together: when it requests changes
// and holds no command (Implicit: the worker runs it only for someone who
// may command, and refuses no one else in words), or when its body is a
// fix command, whose instructions then come with the comments. Any other
// review is read as a comment would be; nil says so.
func reviewFollowUp(id int64, state, body, trigger string) *app.ReviewRef {
	cmd := app.ParseCommand(body, trigger)
	switch {
	case cmd.Action == app.Ignore && state == "changes_requested":
		return &app.ReviewRef{ID: id, Implicit: true}
	case cmd.Action == app.Run && cmd.Verb == app.VerbFix:
		return &app.ReviewRef{ID: id}
	}
	return nil
}

// reviewInstructions are the words of a review that requests changes
// without a command: what the reviewer asks beyond the inline comments,
// cleaned as a command's are and cut to app.MaxInstructions.
func reviewInstructions(body string) string {
	return app.FitText(strings.TrimSpace(app.CleanText(body)), app.MaxInstructions)
}
