package app

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Reaction is an emoji reaction agentbot puts on the command's comment.
type Reaction string

// The reactions that tell a commenter where their command is.
const (
	ReactionReceived Reaction = "eyes"     // 👀 the command was received
	ReactionDone     Reaction = "rocket"   // 🚀 the task succeeded
	ReactionFailed   Reaction = "confused" // 😕 the task failed or was refused
)

// MaxTextLength is the longest body GitHub accepts for a comment, a pull
// request body or a check run's summary and text.
const MaxTextLength = 65536

// FitText returns s unchanged when it fits in limit bytes, or else its head
// and tail cut at line ends with a note saying how much was left out.
// GitHub counts characters; counting bytes never undercounts them.
//
// Trimming, not splitting into continuation comments, because every text
// agentbot posts is either edited in place (the status comment, the check
// run) or has a full copy elsewhere (the trace behind the check run's
// link): one place per text keeps "created once, edited after" true. The
// head keeps the summary and the task marker; the tail keeps the last
// output, where failures are.
func FitText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := func(n int) string {
		return fmt.Sprintf("\n\n… %d characters cut here to fit GitHub's limit …\n\n", n)
	}
	// The note for len(s) is at least as long as the one written: a cut
	// has no more characters than bytes.
	room := limit - len(note(len(s)))
	if room <= 0 {
		return validPrefix(s, limit)
	}
	head := lineCut(validPrefix(s, room*2/3), false)
	tail := lineCut(validSuffix(s, room-len(head)), true)
	cut := s[len(head) : len(s)-len(tail)]
	return head + note(utf8.RuneCountInString(cut)) + tail
}

// validPrefix returns at most n bytes of s's head without splitting a rune.
func validPrefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validSuffix returns at most n bytes of s's tail without splitting a rune.
func validSuffix(s string, n int) string {
	i := max(len(s)-n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// lineCut drops the partial line at the cut: the last one of a head, the
// first one of a tail. A text without line breaks is kept as is.
func lineCut(s string, tail bool) string {
	if tail {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			return s[i+1:]
		}
		return s
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[:i+1]
	}
	return s
}

// Conclusion is how a check run ended.
type Conclusion string

// Check run conclusions agentbot uses.
const (
	ConclusionSuccess   Conclusion = "success"
	ConclusionFailure   Conclusion = "failure"
	ConclusionCancelled Conclusion = "cancelled"
	ConclusionNeutral   Conclusion = "neutral" // refused: nothing was tried
)

// CheckName is the name of agentbot's check run; ReviewCheckName is a
// review's, so that a pull request shows its review apart from the checks
// of fixes on the same head.
const (
	CheckName       = "agentbot"
	ReviewCheckName = "agentbot review"
)

// CheckOutput is what a check run shows: a title, a Markdown summary, and
// the trace as text. Each is trimmed to what GitHub accepts.
type CheckOutput struct {
	Name    string // the check run's name; CheckName when empty
	Title   string
	Summary string
	Text    string
}

// PullRequestDraft is the pull request a task wants to exist.
type PullRequestDraft struct {
	Head  string // the agent's branch, already pushed
	Base  string // usually the default branch
	Title string
	Body  string
	Spec  PullRequestSpec // draft, labels and reviewers, from the policy
}

// PullRequest is an open pull request agentbot opened or found.
type PullRequest struct {
	Number  int
	HTMLURL string
	Created bool // false when it was found open rather than opened by this call
}

// PullRequestSpec says how the agent's pull requests look.
type PullRequestSpec struct {
	Draft        bool
	BranchPrefix string
	Labels       []string
	Reviewers    []string
	OnFailure    string // "comment" (default) or "draft_pr"
	// SignedCommits makes the agent's commits through GitHub's Git
	// database API, which GitHub signs as the App's; false pushes them
	// over git, unsigned.
	SignedCommits bool
	// CIFollowups bounds the follow-ups that the repository's failing CI
	// starts on one of the agent's pull requests; 0 turns them off.
	CIFollowups int
}

// Branch returns the deterministic branch name for a task on an issue.
func (s PullRequestSpec) Branch(number int, slug string) string {
	return fmt.Sprintf("%s%d-%s", s.BranchPrefix, number, slug)
}
