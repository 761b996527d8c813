package app

import "time"

// Verb is what a command asks agentbot to do.
type Verb string

// The verbs of the command grammar. Free-form text after the command word
// is a fix with instructions.
const (
	VerbFix     Verb = "fix"
	VerbStop    Verb = "stop"
	VerbRetry   Verb = "retry"
	VerbStatus  Verb = "status"
	VerbHelp    Verb = "help"
	VerbApprove Verb = "approve"
	VerbDeny    Verb = "deny"
	// VerbAsk and VerbExplain answer a question in a comment, reading the
	// repository without changing it.
	VerbAsk     Verb = "ask"
	VerbExplain Verb = "explain"
	// VerbFixCI asks for a follow-up on the agent's pull request that
	// makes its failing CI pass; a failing check run of another App
	// starts one by itself.
	VerbFixCI Verb = "fix-ci"
	// VerbNote passes guidance to the running fix (note.go).
	VerbNote Verb = "note"
	// VerbSetup asks for the repository's policy: inferred from the
	// default branch's tree, proved in the sandbox, and proposed in a
	// pull request adding .github/agent.yml.
	VerbSetup Verb = "setup"
)

// ReadOnly reports whether the verb only reads the repository: it answers
// in a comment and never opens a branch or a pull request.
func (v Verb) ReadOnly() bool { return v == VerbAsk || v == VerbExplain }

// Control reports whether the verb steers or reports on other tasks
// without running the agent itself: stop, note, status and help. They
// answer at once, so they never wait behind the work they are about.
func (v Verb) Control() bool {
	return v == VerbStop || v == VerbNote || v == VerbStatus || v == VerbHelp
}

// State is where a task is in its lifecycle.
type State string

// Task states. Queued and Running are active; the rest are final except
// AwaitingApproval, which waits for /agent approve or /agent deny.
const (
	StateQueued           State = "queued"
	StateRunning          State = "running"
	StateAwaitingApproval State = "awaiting_approval"
	StateSucceeded        State = "succeeded"
	StateFailed           State = "failed"
	StateStopped          State = "stopped"
	StateRefused          State = "refused"
)

// Final reports whether no further work will happen on a task in this state.
func (s State) Final() bool {
	switch s {
	case StateSucceeded, StateFailed, StateStopped, StateRefused:
		return true
	}
	return false
}

// ReviewComment locates an inline pull request review comment, so that the
// agent sees the line the reviewer pointed at, and the thread it is in.
type ReviewComment struct {
	ID       int64  `json:"id"`
	Path     string `json:"path"`
	Line     int    `json:"line,omitempty"`
	DiffHunk string `json:"diff_hunk,omitempty"`
	// InReplyTo is the comment that begins the thread the comment was
	// replied in, 0 for a comment that begins one.
	InReplyTo int64 `json:"in_reply_to,omitempty"`
}

// Task is one command received from GitHub, as queued for a worker. Its ID is
// derived from the webhook delivery, so a redelivery maps to the same task.
type Task struct {
	ID             string         `json:"id"`
	Delivery       string         `json:"delivery"`
	Event          string         `json:"event"`
	InstallationID int64          `json:"installation_id"`
	Repo           string         `json:"repo"` // owner/name
	Number         int            `json:"number"`
	IsPR           bool           `json:"is_pr"`
	Verb           Verb           `json:"verb"`
	Instructions   string         `json:"instructions,omitempty"`
	Requester      string         `json:"requester"`
	RequesterID    int64          `json:"requester_id,omitempty"` // the requester's numeric id, for the commit trailer's noreply address; 0 in tasks queued before it was kept
	CommentID      int64          `json:"comment_id,omitempty"`
	ReviewComment  *ReviewComment `json:"review_comment,omitempty"`
	// Label is the label added to the issue, for a task from an "issues
	// labeled" event: the worker runs it only when the label is the
	// repository's trigger label, which intake cannot know.
	Label string `json:"label,omitempty"`
	// Review is set for a task that addresses a submitted review's inline
	// comments together.
	Review *ReviewRef `json:"review,omitempty"`
	// CI is set for a follow-up that failing CI started by itself.
	CI *CIEvent `json:"ci,omitempty"`
	// Auto is set for a review that a pull request event started by
	// itself: it runs only when the default branch's review.auto asks for
	// it.
	Auto       *AutoReview `json:"auto,omitempty"`
	ReceivedAt time.Time   `json:"created_at"`
}

// ReviewRef names a submitted pull request review whose inline comments a
// task addresses as one follow-up.
type ReviewRef struct {
	ID int64 `json:"id"`
	// Implicit is set when the review holds no command: its "changes
	// requested" state asks for the follow-up, which runs only for someone
	// who may command and is refused to no one else in words.
	Implicit bool `json:"implicit,omitempty"`
}

// CIEvent is a failing check of the repository's CI on a pull request's
// head, as a check_run, check_suite or workflow_run event reported it.
type CIEvent struct {
	Kind    string `json:"kind"` // the event: check_run, check_suite or workflow_run
	ID      int64  `json:"id"`   // the check run's, check suite's or workflow run's id
	Name    string `json:"name,omitempty"`
	HeadSHA string `json:"head_sha"`
	AppID   int64  `json:"app_id,omitempty"` // the App that ran the check
}
