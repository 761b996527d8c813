package policy

import (
	"time"

	"github.com/agentbot/agentbot/app"
)

// PolicyPath is where a repository keeps its policy, on the default branch.
const PolicyPath = ".github/agent.yml"

// MaxPolicySize bounds a policy file; GitHub's contents API inlines files up
// to 1 MB, and a policy is a few hundred bytes.
const MaxPolicySize = 256 << 10

// CheckPolicySize refuses a policy file above MaxPolicySize; name is how
// the message refers to the file. The worker and "agentbot config
// validate" both call it, so that they refuse the same files.
func CheckPolicySize(name string, size int64) error {
	if size > MaxPolicySize {
		return app.Errorf(app.EInvalid, "%s is %d bytes; a policy may have at most %d.", name, size, MaxPolicySize)
	}
	return nil
}

// Policy is a repository's validated .github/agent.yml, merged over the
// built-in defaults and the organisation's defaults and bounded by the
// server's caps. Every field is usable as is: durations are parsed, globs
// are checked, limits are within the caps.
type Policy struct {
	Version     int
	Trigger     Trigger
	Checks      []Check // the definition of done, fastest first
	Setup       Setup
	Sandbox     SandboxSpec
	Paths       Paths
	Limits      Limits
	Tools       Tools
	Model       Models
	PullRequest app.PullRequestSpec
	Quality     Quality
	Review      ReviewPolicy
	// Source names the files the policy was merged from, lowest first, as
	// they were named to ParsePolicy:
	// "acme/.github@sha:.github/agent.yml < acme/app@sha:.github/agent.yml",
	// or "built-in defaults" when there were none.
	Source string
}

// Trigger says who may start the agent and how.
type Trigger struct {
	Command    string   // "/agent"
	Label      string   // "agent:fix"
	Roles      []string // repository roles allowed to command: admin, maintain, write, triage, read
	Users      []string // extra logins allowed regardless of role
	Approvers  []string // logins or roles allowed to /agent approve and /agent deny
	AllowForks bool     // whether commands on pull requests from forks are served
}

// Check is one acceptance check: a shell line run in the sandbox.
type Check struct {
	Name    string
	Run     string
	Timeout time.Duration
}

// Setup runs before the agent acts, optionally with network.
type Setup struct {
	Network bool
	Run     []string
	Timeout time.Duration
	// CacheKeyFiles are globs of files whose content keys the prepared
	// environment, on top of the lock files detected in every repository.
	CacheKeyFiles []string
}

// SandboxSpec is the container the agent's commands run in.
type SandboxSpec struct {
	Image   string
	CPUs    float64
	Memory  int64 // bytes; also the memory+swap limit
	Pids    int64
	Timeout time.Duration // wall clock for the whole agent phase
	// Disk is how many bytes a command may grow the work tree by before
	// the sandbox kills it.
	Disk int64
}

// Paths says which files the agent may write. Deny wins over Allow, and a
// protected path (see Protected) needs an allow glob that names it.
type Paths struct {
	Allow []string
	Deny  []string
}

// Limits are the task's budgets.
type Limits struct {
	Iterations   int
	DiffLines    int
	FilesChanged int
	Tokens       int64
	CostUSD      float64
	WallClock    time.Duration
	// ContextTokens bounds the conversation shown to the model (the
	// issue's or pull request's thread), in estimated tokens; a longer
	// thread is cut from the middle.
	ContextTokens int
	// Attempts is how many attempts of the loop run side by side on the
	// same prepared environment; the best that passes is proposed.
	Attempts int
}

// Approval is how calls of one tool class are approved.
type Approval string

// Approval policies.
const (
	ApprovalAuto      Approval = "auto"      // run without asking
	ApprovalAllowlist Approval = "allowlist" // run only what Allow matches
	ApprovalHuman     Approval = "human"     // pause until an approver decides
	ApprovalOff       Approval = "off"       // never offered to the model
)

// ToolRule is the approval policy of one tool class.
type ToolRule struct {
	Policy Approval
	Allow  []string // exact command lines or globs, for ApprovalAllowlist
}

// Tools holds the rule for each tool class.
type Tools struct {
	Write ToolRule
	Shell ToolRule
}

// Models names the model for each role.
type Models struct {
	Edit string // drives the loop
	Fast string // digests long logs and old context
	// Vision says the edit model reads images: the conversation's image
	// attachments are then passed to it.
	Vision bool
	// Attempts are the edit models of the attempts, in turn; empty means
	// Edit for every attempt.
	Attempts []string
	// Temperature is the edit model's sampling temperature; nil leaves it
	// to the endpoint's default.
	Temperature *float64
	// Temperatures are the attempts' temperatures, in turn, in place of
	// Temperature; empty means Temperature for every attempt.
	Temperatures []float64
}
