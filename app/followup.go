package app

import "time"

// InlineComment is one inline comment of a pull request review.
type InlineComment struct {
	ID       int64
	Author   string
	Path     string
	Line     int
	DiffHunk string
	Body     string
}

// CICheck is one finished check of the repository's CI on a commit, with
// what it said about its failure.
type CICheck struct {
	ID          int64 // the check run's; for GitHub Actions also the job's
	Name        string
	AppID       int64
	AppSlug     string
	Conclusion  string
	Title       string
	Summary     string
	HTMLURL     string
	CompletedAt time.Time
	Annotations []CIAnnotation
	// Log is the tail of a GitHub Actions job's log; LogCut says that
	// what came before it was left out.
	Log    string
	LogCut bool
}

// CIAnnotation is a check's note on lines of a file.
type CIAnnotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string
	Title     string
	Message   string
}

// Bounds on what of a failing check reaches the model: its summary, its
// annotations and the tail of its log.
const (
	CISummaryBytes  = 4 << 10
	CIAnnotations   = 30
	CILogTailBytes  = 12 << 10
	CIChecksShown   = 5
	CILogFetchBytes = 64 << 20 // read at most this much of a log to find its tail
)

// CIFailed reports whether a check's conclusion is a failure of the change,
// not a cancellation, a skip or a request for a person to act.
func CIFailed(conclusion string) bool {
	switch conclusion {
	case "failure", "timed_out", "startup_failure":
		return true
	}
	return false
}

// CIDecision is what became of one failing check on a head commit of one
// of agentbot's pull requests.
type CIDecision string

// Each failing check on a head is judged once: a follow-up addresses it,
// or it fails on the base too and is not the pull request's to fix, or
// the follow-ups that failing CI may start by itself are used.
const (
	CIFollowUp      CIDecision = "follow-up"
	CIFailsOnBase   CIDecision = "fails on base"
	CIFollowUpsUsed CIDecision = "follow-ups used"
)

// CIAnswer is how task answered the failing check Check, by the App
// AppID, on the pull request's head commit Head.
type CIAnswer struct {
	Owner    RecordOwner `json:"owner"`
	Head     string      `json:"head"`
	AppID    int64       `json:"app_id"`
	Check    string      `json:"check"`
	Task     string      `json:"task"`
	Decision CIDecision  `json:"decision"`
	// BaseRun links the check's failing run on the base, for
	// CIFailsOnBase.
	BaseRun string `json:"base_run,omitempty"`
}

// AgentPull is what is kept with a pull request agentbot opened: the task
// that opened it and the person who asked for that task, whom the commits
// of follow-ups that failing CI starts credit.
type AgentPull struct {
	Owner       RecordOwner `json:"owner"`
	Repo        string      `json:"repo"` // owner/name
	Number      int         `json:"number"`
	Task        string      `json:"task"`
	Requester   string      `json:"requester"`
	RequesterID int64       `json:"requester_id,omitempty"`
}
