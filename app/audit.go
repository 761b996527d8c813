package app

import "time"

// AuditKind says what an audit entry records.
type AuditKind string

// The events the audit log keeps: who asked for what, who decided what, and
// what agentbot did or refused to do on their behalf.
const (
	AuditCommand     AuditKind = "command"      // a command was received
	AuditAdmission   AuditKind = "admission"    // a task was admitted or refused, with the reason
	AuditApproval    AuditKind = "approval"     // an approver let a paused tool call run, or a plan go on
	AuditDenial      AuditKind = "denial"       // an approver refused a paused tool call, or a plan
	AuditBlocked     AuditKind = "blocked"      // a write or command was refused: a safety incident
	AuditPush        AuditKind = "push"         // a branch was pushed (detail names branch and commit)
	AuditPROpened    AuditKind = "pr_opened"    // a pull request was opened
	AuditPolicyError AuditKind = "policy_error" // .github/agent.yml could not be used
	AuditAnswered    AuditKind = "answered"     // a question was answered (detail names the commit read)
)

// Valid reports whether k is one of the kinds above.
func (k AuditKind) Valid() bool {
	switch k {
	case AuditCommand, AuditAdmission, AuditApproval, AuditDenial, AuditBlocked,
		AuditPush, AuditPROpened, AuditPolicyError, AuditAnswered:
		return true
	}
	return false
}

// AuditEntry is one line of an installation's audit log. Entries are only
// ever appended; ID and Time are set when the entry is stored.
type AuditEntry struct {
	ID           string    `json:"id,omitempty"` // the store's id, in append order
	Time         time.Time `json:"time"`
	Kind         AuditKind `json:"kind"`
	Installation int64     `json:"installation"`
	Actor        string    `json:"actor,omitempty"` // the GitHub login who caused it; "" for agentbot itself
	Repo         string    `json:"repo,omitempty"`  // owner/name
	Number       int       `json:"number,omitempty"`
	Task         string    `json:"task,omitempty"`
	// Allowed is the decision of an admission; false for refusals.
	Allowed bool   `json:"allowed,omitempty"`
	Detail  string `json:"detail,omitempty"` // the reason, the command, the branch and commit
}

// Bounds on an audit entry, so that no task, whatever its commands write,
// grows the shared Redis without bound: MaxAuditDetail bytes of Detail,
// MaxAuditLabel of each other text field.
const (
	MaxAuditDetail = 2048
	MaxAuditLabel  = 256
)

// Capped returns e with its text fields cut to their bounds.
func (e AuditEntry) Capped() AuditEntry {
	e.Detail = FitText(e.Detail, MaxAuditDetail)
	for _, f := range []*string{&e.Actor, &e.Repo, &e.Task} {
		*f = FitText(*f, MaxAuditLabel)
	}
	return e
}

// AuditEntryFor returns an entry of kind about t, with t's installation,
// repository, issue and requester filled in.
func AuditEntryFor(kind AuditKind, t *Task, detail string) AuditEntry {
	return AuditEntry{
		Kind:         kind,
		Installation: t.InstallationID,
		Actor:        t.Requester,
		Repo:         t.Repo,
		Number:       t.Number,
		Task:         t.ID,
		Detail:       detail,
	}
}
