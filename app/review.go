package app

import (
	"strings"
)

// VerbReview asks for a review of a pull request: findings posted as one
// GitHub review, each proven by a test the host runs or labelled unproven.
const VerbReview Verb = "review"

// Severity ranks a review's finding; the policy's min_severity is the
// least an unproven finding needs to be posted.
type Severity string

// Severities, most severe first.
const (
	SeverityHigh   Severity = "high"
	SeverityMedium Severity = "medium"
	SeverityLow    Severity = "low"
)

// Rank orders severities: high is 3, low 1, anything else 0.
func (s Severity) Rank() int {
	switch s {
	case SeverityHigh:
		return 3
	case SeverityMedium:
		return 2
	case SeverityLow:
		return 1
	}
	return 0
}

// SeverityOf reads a severity as the model writes it, or "" for none.
func SeverityOf(s string) Severity {
	v := Severity(strings.ToLower(strings.TrimSpace(s)))
	if v.Rank() == 0 {
		return ""
	}
	return v
}

// ReviewDraft is a review to submit on a pull request: one GitHub review
// with its inline comments.
type ReviewDraft struct {
	CommitID string // the head the comments' lines are on
	Body     string
	Event    string // COMMENT or REQUEST_CHANGES
	Comments []ReviewDraftComment
}

// ReviewDraftComment is one inline comment of a ReviewDraft, on a line of
// the head's side of the diff.
type ReviewDraftComment struct {
	Path string
	Line int
	Body string
}

// Review events a ReviewDraft may carry; agentbot never approves.
const (
	ReviewEventComment        = "COMMENT"
	ReviewEventRequestChanges = "REQUEST_CHANGES"
)

// AutoReview is the pull request event that may start a review by itself,
// as intake read it from the payload.
type AutoReview struct {
	// Action is the event's: opened, reopened, ready_for_review or
	// synchronize (a push).
	Action  string `json:"action"`
	HeadSHA string `json:"head_sha"` // the head the event is about
	Draft   bool   `json:"draft,omitempty"`
}

// Pushed reports whether the event is a push to the pull request.
func (a AutoReview) Pushed() bool { return a.Action == "synchronize" }

// ReviewThread is one review thread of a pull request: its GraphQL node
// id, whether it is resolved, and the comment that begins it.
type ReviewThread struct {
	ID        string
	Resolved  bool
	CommentID int64
}
