package app

import (
	"log/slog"
	"time"
)

// RepoInfo is what agentbot needs to know of a repository.
type RepoInfo struct {
	// ID is the repository's numeric id: unlike its name, which can be
	// transferred or reused, never another repository's.
	ID            int64
	FullName      string // owner/name
	DefaultBranch string
	CloneURL      string // from the API, never built by hand
	Private       bool
}

// RecordOwner is whose a record is that one task leaves for another: the
// installation and the repository, by id. A task uses such a record only
// when it is its own installation's and repository's.
type RecordOwner struct {
	InstallationID int64 `json:"installation_id"`
	RepoID         int64 `json:"repo_id"`
}

// Owns reports whether a record of o is one a task of t may use; a record
// whose owner is not known is nobody's.
func (o RecordOwner) Owns(t RecordOwner) bool {
	return o.InstallationID != 0 && o.RepoID != 0 && o == t
}

// IssueInfo is what a task reads of the issue or pull request it was asked
// on: the words of the request's context, and for a pull request where its
// branch lives.
type IssueInfo struct {
	Title      string
	Body       string
	Author     string
	AuthorType string // GitHub's user type: "User", "Bot"
	CreatedAt  time.Time
	Pull       *PullInfo // set for a pull request
}

// PullInfo locates a pull request's branches.
type PullInfo struct {
	Head     string // the head branch
	HeadRepo string // owner/name of the repository holding Head: the base repository or a fork
	HeadSHA  string
	Base     string
	BaseSHA  string // the base branch's commit the pull request compares with
}

// TokenPermissions are the permissions an installation token carries:
// "read", "write" or empty for none. Ask for the least the work needs.
type TokenPermissions struct {
	Contents     string
	Issues       string
	PullRequests string
	Checks       string
	Actions      string
}

// RepoToken is an installation token scoped to one repository. It is a
// credential: use it only on the host, never log it, never hand it to a
// sandbox. String and LogValue redact it so that a stray print cannot leak it.
type RepoToken struct {
	Value     string
	ExpiresAt time.Time
}

func (t RepoToken) String() string { return "[token redacted]" }

// LogValue keeps the token out of structured logs.
func (t RepoToken) LogValue() slog.Value {
	return slog.GroupValue(slog.Time("expires_at", t.ExpiresAt))
}
