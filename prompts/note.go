package prompts

import (
	"regexp"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// NoteData is one "/agent note" as the loop shows it to the model.
type NoteData struct {
	By   string
	At   time.Time
	Text string
}

// Clock is the note's time as people say it: 12:03 UTC.
func (d NoteData) Clock() string { return d.At.UTC().Format("15:04 MST") }

// Stamp is the note's time in full, for the frame.
func (d NoteData) Stamp() string { return d.At.UTC().Format(time.RFC3339) }

// Body is the note's text unable to end its frame.
func (d NoteData) Body() string {
	return noteTag.ReplaceAllString(strings.TrimSpace(app.CleanText(d.Text)), "&lt;$1")
}

// noteTag is the tag that frames a note, in any case.
var noteTag = regexp.MustCompile(`(?i)<(/?note)`)

// Note renders a note as the user message the loop adds before its next
// step.
func Note(d NoteData) (string, error) { return render("note.tmpl", d) }
