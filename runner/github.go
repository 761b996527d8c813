package runner

import (
	"context"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// GitHub is what the runner needs of the GitHub App: a task's clients and
// tokens, each scoped to the task's repository. runner/githubapp adapts
// app/github's App to it.
type GitHub interface {
	Installation(installationID int64, repo string) (Installation, error)
	Token(ctx context.Context, installationID int64, repo string, perms app.TokenPermissions) (app.RepoToken, error)
	// Committer is the client that creates commits and moves branches.
	Committer(installationID int64, repo string) (Committer, error)
}

// Installation is the App acting on one task's repository: what the task
// reads there and what it says there.
type Installation interface {
	RepoReader
	RepoWriter
}

// RepoReader is what admission, follow-ups and the agent's prompt read of
// the repository.
type RepoReader interface {
	// Permission is a login's role, which decides who may command.
	app.Permissions
	LoadPolicy(ctx context.Context, repo string, server policy.ServerConfig) (policy.LoadedPolicy, error)
	Issue(ctx context.Context, repo string, number int) (app.IssueInfo, error)
	Conversation(ctx context.Context, repo string, number int, info app.IssueInfo) (app.Conversation, error)
	// ReviewComments and CIChecks are what a follow-up answers: a
	// review's inline comments, and the checks of a commit (name and
	// appID narrow them when set).
	ReviewComments(ctx context.Context, repo string, pull int, reviewID int64) ([]app.InlineComment, error)
	CIChecks(ctx context.Context, repo, sha, name string, appID int64) ([]app.CICheck, error)
	// ReviewThreads are a pull request's review threads, which a later
	// review looks at again.
	ReviewThreads(ctx context.Context, repo string, pull int) ([]app.ReviewThread, error)
	// DismissedReviews are the ids of the pull request's dismissed reviews.
	DismissedReviews(ctx context.Context, repo string, pull int) ([]int64, error)
}

// RepoWriter is what a task writes on GitHub: through its reporter, the
// status comment, the check run, the reactions on the command and the
// replies in review threads; and its pull request. Each write is found
// again rather than repeated when a task runs again.
type RepoWriter interface {
	// StatusComment is task taskID's one comment on repo#number; nothing
	// is sent before its first Set.
	StatusComment(repo string, number int, taskID string) StatusComment
	// CheckRun is task taskID's check run on headSHA: id is the run's,
	// kept from an earlier Complete, or zero for a new one.
	CheckRun(repo, headSHA, taskID string, id int64) CheckRun
	React(ctx context.Context, t *app.Task, r app.Reaction) error
	ReplyInThread(ctx context.Context, repo string, pull int, commentID int64, taskID, body string) error
	EnsurePullRequest(ctx context.Context, repo string, d app.PullRequestDraft) (app.PullRequest, error)
	// SubmitReview submits task taskID's review of repo#pull once, and
	// returns its id.
	SubmitReview(ctx context.Context, repo string, pull int, taskID string, d app.ReviewDraft) (int64, error)
	// ResolveThread resolves a review thread, by its id.
	ResolveThread(ctx context.Context, id string) error
}

// StatusComment is a task's status comment.
type StatusComment interface {
	// Set makes the comment say body (Markdown), creating it on the
	// first call.
	Set(ctx context.Context, body string) error
}

// CheckRun is a task's check run.
type CheckRun interface {
	// Complete ends the run with c and out, creating it unless its id is
	// known.
	Complete(ctx context.Context, c app.Conclusion, out app.CheckOutput) error
	// ID is the run's id once it exists, which the task keeps.
	ID() int64
}

// Committer makes a signed commit through GitHub's Git database and moves
// a branch to it: the signed push.
type Committer interface {
	// BranchHead is the commit branch points at, "" when there is no such
	// branch.
	BranchHead(ctx context.Context, repo, branch string) (string, error)
	GetCommit(ctx context.Context, repo, sha string) (app.GitCommit, error)
	CreateCommit(ctx context.Context, repo string, c app.NewCommit) (app.GitCommit, error)
	// MoveBranch points branch at sha from old ("" for a new branch), and
	// never moves a branch that is no longer at old.
	MoveBranch(ctx context.Context, repo, branch, old, sha string) error
}
