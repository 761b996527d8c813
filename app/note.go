package app

import "time"

// Note is guidance that someone who may command agentbot sent a running
// task with "/agent note": the loop shows it to the model, framed as
// guidance and never as permission, at its next step. Notes are kept with
// the task they are for, in the order they came, so that a task resumed on
// another worker still reads the ones it has not read.
type Note struct {
	// Task is the note task's own id: the note is kept once, however
	// often that task runs.
	Task string    `json:"task"`
	By   string    `json:"by"` // the login that wrote it
	At   time.Time `json:"at"` // when the comment was received
	Text string    `json:"text"`
}
