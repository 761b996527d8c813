package agent

import (
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/tools"
)

// State is everything a task's loop knows, saved after every step so that
// another worker can resume it. It is JSON on the wire.
type State struct {
	TaskID string    `json:"task_id"`
	Status app.State `json:"status"` // running, awaiting_approval, or final
	Step   int       `json:"step"`   // model answers received
	// Messages is the transcript, system prompt and task first.
	Messages []llm.Message `json:"messages"`
	// Plan is the model's latest stated plan or reasoning.
	Plan string `json:"plan,omitempty"`
	// Touched lists the files whose content differs from the base.
	Touched []string `json:"touched,omitempty"`
	// Originals are the base contents of the files written so far, which the
	// tools measure the diff budget against.
	Originals map[string]*string `json:"originals,omitempty"`
	// Checks are every check run, in order.
	Checks []tools.CheckRun `json:"checks,omitempty"`
	// Diff is the work tree's diff against the base commit.
	Diff    string        `json:"diff,omitempty"`
	Usage   llm.Usage     `json:"usage"`
	Counts  Counts        `json:"counts"`
	Elapsed time.Duration `json:"elapsed"`
	// Pending is the call awaiting a human's decision.
	Pending   *llm.ToolCall `json:"pending,omitempty"`
	Approvals []Approval    `json:"approvals,omitempty"`
	Stop      *Stop         `json:"stop,omitempty"`
	Summary   string        `json:"summary,omitempty"` // finish's summary, or a question's answer
	Title     string        `json:"title,omitempty"`   // finish's title for the pull request
	// NotesRead counts the notes of "/agent note" added to the transcript.
	NotesRead int `json:"notes_read,omitempty"`

	// The stop rules' memory.
	Recent      []string `json:"recent,omitempty"`       // signatures of the last calls
	LastFailure string   `json:"last_failure,omitempty"` // signature of the last failing check
	TextOnly    int      `json:"text_only,omitempty"`    // answers in a row without a tool call
	Corrected   bool     `json:"corrected,omitempty"`    // the tree changed since LastFailure
}

// Counts are the task's tallies for the report and the metrics. Blocked
// writes and commands are safety incidents.
type Counts struct {
	ToolCalls       int   `json:"tool_calls"`
	InvalidCalls    int   `json:"invalid_calls"`
	BlockedWrites   int   `json:"blocked_writes"`
	BlockedCommands int   `json:"blocked_commands"`
	Digests         int   `json:"digests"`
	TokensSaved     int64 `json:"tokens_saved"` // by digests, estimated
}

// Approval is a human's decision on a paused call.
type Approval struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	By        string `json:"by"`
	Approved  bool   `json:"approved"`
}

// Stop says why the loop ended; Detail is a sentence for the report.
type Stop struct {
	Reason StopReason `json:"reason"`
	Detail string     `json:"detail"`
}

// StopReason names a stop rule.
type StopReason string

// Stop reasons.
const (
	StopDone        StopReason = "done"         // finish accepted on green checks
	StopSameFailure StopReason = "same_failure" // a failure came back after its correction
	StopLoop        StopReason = "loop"         // identical calls with identical results
	StopTextOnly    StopReason = "text_only"    // answers in a row with text and no tool call
	StopIterations  StopReason = "iterations"
	StopWallClock   StopReason = "wall_clock"
	StopTokens      StopReason = "tokens"
	StopCost        StopReason = "cost"
	StopBudget      StopReason = "budget" // Config.Budget's: a budget beyond the task's own
)

// state is the task state a stop leaves.
func (r StopReason) state() app.State {
	switch r {
	case StopDone:
		return app.StateSucceeded
	}
	return app.StateFailed
}
