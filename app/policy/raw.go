package policy

import (
	"cmp"
	"slices"
)

// RawPolicy is one .github/agent.yml as written: every value a pointer or a
// slice so that an absent key (nil) differs from a zero, because a layer
// only overrides what it sets. BuildPolicy merges raw layers into a
// validated Policy. The JSON Schema of the file (PolicySchema) is generated
// from these types, and their desc tags are its descriptions.
type RawPolicy struct {
	Version     *int           `yaml:"version" desc:"Format of this file. Only 1 exists."`
	Trigger     RawTrigger     `yaml:"trigger" desc:"Who may start the agent, and how."`
	Checks      []RawCheck     `yaml:"checks" desc:"The definition of done, fastest first: shell lines run in the sandbox that must all pass. A task is refused without checks."`
	Setup       RawSetup       `yaml:"setup" desc:"Commands run before the agent acts (dependencies, caches), optionally with network."`
	Sandbox     RawSandbox     `yaml:"sandbox" desc:"The container the agent's commands run in."`
	Paths       RawPaths       `yaml:"paths" desc:"Which files the agent may write. deny wins over allow; .github/, CODEOWNERS and .github/agent.yml also need an allow glob that names them."`
	Limits      RawLimits      `yaml:"limits" desc:"The task's budgets. A value above the server's cap is an error."`
	Tools       RawTools       `yaml:"tools" desc:"How calls of each tool class are approved."`
	Model       RawModels      `yaml:"model" desc:"Model names for each role; empty means the server's default."`
	PullRequest RawPullRequest `yaml:"pull_request" desc:"How the agent's pull requests look."`
	Quality     RawQuality     `yaml:"quality" desc:"What the host proves about a change before proposing it."`
	Review      RawReview      `yaml:"review" desc:"How agentbot reviews pull requests (/agent review)."`

	file  string         // as named to ParsePolicy, for messages
	lines map[string]int // path -> line, as decoded
}

// RawTrigger is the trigger section of a policy file.
type RawTrigger struct {
	Command    *string  `yaml:"command" desc:"The comment prefix that addresses agentbot, such as /agent."`
	Label      *string  `yaml:"label" desc:"Adding this label to an issue starts a fix."`
	Roles      []string `yaml:"roles" desc:"Repository roles whose members may command agentbot." enum:"admin,maintain,write,triage,read"`
	Users      []string `yaml:"users" desc:"Logins that may command agentbot whatever their role."`
	Approvers  []string `yaml:"approvers" desc:"Roles (admin, maintain, write, triage, read) or logins that may answer /agent approve and /agent deny."`
	AllowForks *bool    `yaml:"allow_forks" desc:"Whether commands on pull requests from forks are served."`
}

// RawCheck is one entry of the checks list.
type RawCheck struct {
	Name    *string      `yaml:"name" desc:"A short unique name; defaults to the command line."`
	Run     *string      `yaml:"run" desc:"The shell line to run in the sandbox."`
	Timeout *RawDuration `yaml:"timeout" desc:"How long the check may run, such as 5m."`
}

// RawSetup is the setup section of a policy file.
type RawSetup struct {
	Network *bool        `yaml:"network" desc:"Whether setup runs with network; the server may forbid it."`
	Run     []string     `yaml:"run" desc:"Shell lines run in order before the agent acts."`
	Timeout *RawDuration `yaml:"timeout" desc:"How long the whole setup may run."`
	// CacheKeyFiles add to the lock files detected in every repository.
	CacheKeyFiles []string `yaml:"cache_key_files" desc:"Globs of files, relative to the repository, whose content keys the prepared environment on top of the lock files detected (go.sum, package-lock.json, requirements*.txt and others): when one changes, setup runs again."`
}

// RawSandbox is the sandbox section of a policy file.
type RawSandbox struct {
	Image   *string      `yaml:"image" desc:"The container image; the server lists the images it allows."`
	CPUs    *float64     `yaml:"cpus" desc:"CPU limit, such as 2 or 0.5."`
	Memory  *RawSize     `yaml:"memory" desc:"Memory limit (also memory+swap), such as 4GiB or 512MiB."`
	Pids    *int64       `yaml:"pids" desc:"Maximum number of processes."`
	Timeout *RawDuration `yaml:"timeout" desc:"Wall clock for the whole agent phase, such as 45m."`
	Disk    *RawSize     `yaml:"disk" desc:"How much disk a command may add to the work tree while it runs, such as 1GiB; a command that writes more is killed."`
}

// RawPaths is the paths section of a policy file.
type RawPaths struct {
	Allow []string `yaml:"allow" desc:"Globs (doublestar syntax, ** for any depth) of files the agent may write, matched as written. A path under .github/ is allowed only by a glob containing .github/, a CODEOWNERS file only by one containing CODEOWNERS, the policy file only by one containing agent.yml."`
	Deny  []string `yaml:"deny" desc:"Globs of files the agent may never write, matched regardless of case; deny wins over allow. Replaces the default list whole."`
}

// RawLimits is the limits section of a policy file.
type RawLimits struct {
	Iterations    *int         `yaml:"iterations" desc:"Maximum model turns."`
	DiffLines     *int         `yaml:"diff_lines" desc:"Maximum changed lines; a larger diff is refused, never truncated."`
	FilesChanged  *int         `yaml:"files_changed" desc:"Maximum files changed."`
	Tokens        *int64       `yaml:"tokens" desc:"Maximum model tokens, prompt and completion."`
	CostUSD       *float64     `yaml:"cost_usd" desc:"Maximum model cost in US dollars."`
	WallClock     *RawDuration `yaml:"wall_clock" desc:"Maximum time from start to pull request, such as 1h."`
	ContextTokens *int         `yaml:"context_tokens" desc:"Maximum tokens of the issue's or pull request's conversation shown to the model; a longer thread is cut from the middle."`
	Attempts      *int         `yaml:"attempts" desc:"How many attempts of the agent run side by side, each in its own sandbox over the same prepared environment, each with the whole of iterations and wall_clock and an equal share of tokens; cost_usd bounds their sum. The best attempt whose change passes becomes the pull request. More than one cannot pause for an approver (a human tool rule)."`
}

// RawTools is the tools section of a policy file.
type RawTools struct {
	Write RawToolRule `yaml:"write" desc:"File edits: auto, allowlist, human or off."`
	Shell RawToolRule `yaml:"shell" desc:"Shell commands: auto, allowlist, human or off."`
}

// RawToolRule is the rule of one tool class, written either as the policy
// alone ("shell: auto") or as a mapping with an allowlist.
type RawToolRule struct {
	Policy *Approval `yaml:"policy" desc:"auto runs without asking, allowlist runs only what allow matches, human pauses for an approver, off hides the tool."`
	Allow  []string  `yaml:"allow" desc:"For allowlist: exact command lines or globs."`
}

func (*RawToolRule) shorthandField() string { return "policy" }

// RawModels is the model section of a policy file.
type RawModels struct {
	Edit   *string `yaml:"edit" desc:"The model that drives the loop."`
	Fast   *string `yaml:"fast" desc:"The model that digests long logs and old context."`
	Vision *bool   `yaml:"vision" desc:"Whether the edit model reads images: images attached to the conversation are passed to it (at most 5, 5 MiB each, PNG, JPEG, GIF or WebP)."`
	// Attempts name the edit model of each attempt of limits.attempts.
	Attempts []string `yaml:"attempts" desc:"Edit models of the attempts of limits.attempts: attempt i uses attempts[i mod its length]; empty means edit for all."`
	// Temperature and Temperatures go with the edit model only: the fast
	// model's digests have one right answer.
	Temperature  *float64  `yaml:"temperature" desc:"The edit model's sampling temperature, from 0 to 2; absent leaves it to the endpoint's default." zero:"allowed" max:"2"`
	Temperatures []float64 `yaml:"temperatures" desc:"Sampling temperatures of the attempts of limits.attempts, each from 0 to 2: attempt i uses temperatures[i mod its length] in place of temperature; empty means temperature for all." zero:"allowed" max:"2"`
}

// RawPullRequest is the pull_request section of a policy file.
type RawPullRequest struct {
	Draft         *bool    `yaml:"draft" desc:"Open pull requests as drafts."`
	BranchPrefix  *string  `yaml:"branch_prefix" desc:"Prefix of the agent's branch names, such as agent/."`
	Labels        []string `yaml:"labels" desc:"Labels added to the agent's pull requests."`
	Reviewers     []string `yaml:"reviewers" desc:"Logins asked to review the agent's pull requests."`
	OnFailure     *string  `yaml:"on_failure" desc:"When checks stay red: comment explains on the issue, draft_pr opens a draft pull request anyway." enum:"comment,draft_pr"`
	SignedCommits *bool    `yaml:"signed_commits" desc:"Create the agent's commits through GitHub's API, signed by the App and shown as verified; false pushes them over git, unsigned."`
	CIFollowups   *int     `yaml:"ci_followups" desc:"How many times failing CI on one of the agent's pull requests starts a follow-up that fixes it; 0 turns this off." zero:"allowed"`
}

// RawDuration is a Go duration as written, such as 90s, 15m or 1h30m.
type RawDuration string

// RawSize is a byte size as written, such as 4GiB, 512m or 1073741824.
type RawSize string

// ParsePolicy decodes and checks one policy file. name is how messages and
// Policy.Source refer to the file, such as "acme/app@1a2b3c:.github/agent.yml".
// Unknown keys, wrong types, repeated keys and bad values (globs, durations,
// sizes, enums, duplicate check names) are reported together, one a line,
// as "NAME:LINE: FIELD: sentence" in an *Error. What depends on the server
// (caps, images, network) or on other files is checked by BuildPolicy.
func ParsePolicy(name string, data []byte) (*RawPolicy, error) {
	r := &RawPolicy{file: name}
	var errs []fieldError
	r.lines, errs = decodeFile(name, data, r)
	// Check the values alone too, without the server's caps, so that all of
	// a file's mistakes are reported at once. A value that did not decode
	// is unset here, so nothing is reported twice.
	b := newPolicyBuilder(nil)
	b.apply(r, repoLayer)
	errs = append(errs, b.errs...)
	slices.SortStableFunc(errs, func(x, y fieldError) int { return cmp.Compare(x.line, y.line) })
	if err := fieldErrors(errs); err != nil {
		return nil, err
	}
	return r, nil
}
