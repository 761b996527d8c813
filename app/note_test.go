package app

import "testing"

func TestParseNote(t *testing.T) {
	for body, want := range map[string]Parsed{
		"/agent note keep the API\nand the docs": {Action: Run, Verb: VerbNote, Instructions: "keep the API\nand the docs"},
		"/agent NOTE  use   the cache":           {Action: Run, Verb: VerbNote, Instructions: "use   the cache"},
		"/agent note":                            {Action: Reply, Verb: VerbHelp, Reason: "`/agent note` needs the note, such as `/agent note keep the public API unchanged`."},
	} {
		if got := ParseCommand(body, ""); got != want {
			t.Errorf("ParseCommand(%q) = %+v; want %+v", body, got, want)
		}
	}
	if !VerbNote.Control() {
		t.Error("a note takes a slot: it would wait behind the task it is for")
	}
}
