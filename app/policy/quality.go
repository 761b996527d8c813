package policy

// Reproduce says whether a fix must first show the problem it fixes: a new
// or changed test that fails on the base commit and passes with the change.
type Reproduce string

// Reproduction policies.
const (
	// ReproduceRequired opens no pull request for a change that is not
	// reproduced; the status comment says why.
	ReproduceRequired Reproduce = "required"
	// ReproducePreferred opens the pull request either way, saying plainly
	// when the fix is unproven.
	ReproducePreferred Reproduce = "preferred"
	// ReproduceOff neither asks for a reproduction nor tries one.
	ReproduceOff Reproduce = "off"
)

// Quality is what the host proves about a change before proposing it.
type Quality struct {
	// Reproduce is the policy as written, or "" when no layer sets it;
	// see ReproduceFor.
	Reproduce Reproduce
	// Plan is whether a fix plans first (plan.go); "" is off.
	Plan PlanMode
}

// RawQuality is the quality section of a policy file.
type RawQuality struct {
	Reproduce *string `yaml:"reproduce" desc:"Whether the agent must first add or change a test that fails on the base commit, and the host prove it fails there and passes with the change: required opens no pull request without that proof, preferred says in the pull request that the fix is unproven, off skips it. Unset: preferred for fixes of issues, off for follow-ups on pull requests; set, it applies to both." enum:"required,preferred,off"`
	Plan      *string `yaml:"plan" desc:"Whether a fix first writes a plan (what it will change and why, the test that reproduces the problem, the checks it will run, a cost estimate from similar tasks) from the code, read only: off does not, show posts it in the status comment and goes on, approve posts it and waits, with nothing written, for /agent approve, or /agent note to revise it, within limits.wall_clock. Default off." enum:"off,show,approve"`
}

// ReproduceFor is the reproduction policy of a task: the one written, or
// else preferred for a fix of an issue and off for a follow-up on a pull
// request, whose change often has nothing to reproduce (a rename asked in
// review).
func (p Policy) ReproduceFor(onPullRequest bool) Reproduce {
	switch {
	case p.Quality.Reproduce != "":
		return p.Quality.Reproduce
	case onPullRequest:
		return ReproduceOff
	}
	return ReproducePreferred
}

func checkReproduce(b *policyBuilder, v string) (Reproduce, string) {
	s, problem := checkOneOf(string(ReproduceRequired), string(ReproducePreferred), string(ReproduceOff))(b, v)
	return Reproduce(s), problem
}
