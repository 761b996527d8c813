package policy

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/bmatcuk/doublestar/v4"
)

// ReviewAuto says which pull request events start a review by themselves.
type ReviewAuto string

// Automatic reviews.
const (
	ReviewAutoOff    ReviewAuto = "off"    // only /agent review
	ReviewAutoOpened ReviewAuto = "opened" // when a pull request is opened or marked ready
	ReviewAutoPushed ReviewAuto = "pushed" // also on every push to it
)

// BlockOn says when a review asks for changes instead of commenting.
type BlockOn string

// Blocking rules.
const (
	BlockNone   BlockOn = "none"   // always a comment; the check run is neutral
	BlockProven BlockOn = "proven" // a proven finding requests changes and fails the check run
)

// ReviewPolicy is the review section of a policy.
type ReviewPolicy struct {
	Auto ReviewAuto
	// Drafts lets automatic reviews run on draft pull requests.
	Drafts bool
	// Paths limit automatic reviews to pull requests touching them; empty
	// means any.
	Paths       []string
	MinSeverity app.Severity
	MaxComments int
	BlockOn     BlockOn
	// Limits bound a review's loop as limits bound a fix's; values not
	// set here are the policy's.
	Limits Limits
}

// RawReview is the review section of a policy file.
type RawReview struct {
	Auto        *string         `yaml:"auto" desc:"Which pull request events start a review by themselves: off (only /agent review), opened (when opened or marked ready for review), pushed (also on every push)." enum:"off,opened,pushed"`
	Drafts      *bool           `yaml:"drafts" desc:"Whether automatic reviews run on draft pull requests."`
	Paths       []string        `yaml:"paths" desc:"Globs of files: an automatic review runs only on pull requests that change one; empty means any."`
	MinSeverity *string         `yaml:"min_severity" desc:"The least severity of a finding the host could not prove with a test for it to be posted, labelled unproven; proven findings are always posted." enum:"high,medium,low"`
	MaxComments *int            `yaml:"max_comments" desc:"At most this many inline comments per review, most severe first; the rest are summarized in the review's body."`
	BlockOn     *string         `yaml:"block_on" desc:"none: a review only comments and its check run is neutral; proven: a proven finding requests changes and fails the check run." enum:"none,proven"`
	Limits      RawReviewLimits `yaml:"limits" desc:"The review's budgets, as limits are a fix's."`
}

// RawReviewLimits are the budgets of a review.
type RawReviewLimits struct {
	Iterations *int         `yaml:"iterations" desc:"Maximum model turns of a review."`
	Tokens     *int64       `yaml:"tokens" desc:"Maximum model tokens of a review."`
	CostUSD    *float64     `yaml:"cost_usd" desc:"Maximum model cost of a review in US dollars."`
	WallClock  *RawDuration `yaml:"wall_clock" desc:"Maximum time of a review, proofs included, such as 30m."`
}

// reviewSettings are the review section's rows of the settings table.
func reviewSettings() []policySetting {
	return []policySetting{
		valueSetting("review.auto", func(r *RawPolicy) *string { return r.Review.Auto }, func(p *Policy) *ReviewAuto { return &p.Review.Auto }, checkReviewAuto),
		valueSetting("review.drafts", func(r *RawPolicy) *bool { return r.Review.Drafts }, func(p *Policy) *bool { return &p.Review.Drafts }, asIs[bool]),
		listSetting("review.paths", func(r *RawPolicy) []string { return r.Review.Paths }, func(p *Policy) *[]string { return &p.Review.Paths }, checkGlob),
		valueSetting("review.min_severity", func(r *RawPolicy) *string { return r.Review.MinSeverity }, func(p *Policy) *app.Severity { return &p.Review.MinSeverity }, checkSeverity),
		valueSetting("review.max_comments", func(r *RawPolicy) *int { return r.Review.MaxComments }, func(p *Policy) *int { return &p.Review.MaxComments }, checkMaxComments),
		valueSetting("review.block_on", func(r *RawPolicy) *string { return r.Review.BlockOn }, func(p *Policy) *BlockOn { return &p.Review.BlockOn }, checkBlockOn),
		valueSetting("review.limits.iterations", func(r *RawPolicy) *int { return r.Review.Limits.Iterations }, func(p *Policy) *int { return &p.Review.Limits.Iterations }, checkPositive(func(c Caps) int { return c.Limits.Iterations })),
		valueSetting("review.limits.tokens", func(r *RawPolicy) *int64 { return r.Review.Limits.Tokens }, func(p *Policy) *int64 { return &p.Review.Limits.Tokens }, checkPositive(func(c Caps) int64 { return c.Limits.Tokens })),
		valueSetting("review.limits.cost_usd", func(r *RawPolicy) *float64 { return r.Review.Limits.CostUSD }, func(p *Policy) *float64 { return &p.Review.Limits.CostUSD }, checkPositive(func(c Caps) float64 { return c.Limits.CostUSD })),
		valueSetting("review.limits.wall_clock", func(r *RawPolicy) *RawDuration { return r.Review.Limits.WallClock }, func(p *Policy) *time.Duration { return &p.Review.Limits.WallClock }, checkDuration(func(c Caps) time.Duration { return c.Limits.WallClock })),
	}
}

func checkReviewAuto(b *policyBuilder, v string) (ReviewAuto, string) {
	s, problem := checkOneOf(string(ReviewAutoOff), string(ReviewAutoOpened), string(ReviewAutoPushed))(b, v)
	return ReviewAuto(s), problem
}

func checkSeverity(b *policyBuilder, v string) (app.Severity, string) {
	s, problem := checkOneOf(string(app.SeverityHigh), string(app.SeverityMedium), string(app.SeverityLow))(b, v)
	return app.Severity(s), problem
}

func checkBlockOn(b *policyBuilder, v string) (BlockOn, string) {
	s, problem := checkOneOf(string(BlockNone), string(BlockProven))(b, v)
	return BlockOn(s), problem
}

// maxReviewComments bounds review.max_comments: a review of more inline
// comments than this is noise nobody reads.
const maxReviewComments = 50

func checkMaxComments(_ *policyBuilder, v int) (int, string) {
	if v < 1 || v > maxReviewComments {
		return 0, fmt.Sprintf("%d is not a number of comments from 1 to %d", v, maxReviewComments)
	}
	return v, ""
}

// ReviewLimits are the limits a review runs under: the policy's, with
// review.limits' values in place of theirs.
func (p Policy) ReviewLimits() Limits {
	l := p.Limits
	r := p.Review.Limits
	l.Iterations = cmp.Or(r.Iterations, l.Iterations)
	l.Tokens = cmp.Or(r.Tokens, l.Tokens)
	l.CostUSD = cmp.Or(r.CostUSD, l.CostUSD)
	l.WallClock = cmp.Or(r.WallClock, l.WallClock)
	l.Attempts = 1
	return l
}

// Posts reports whether a finding of severity s is posted: proven ones
// always, unproven ones from min_severity up.
func (r ReviewPolicy) Posts(s app.Severity, proven bool) bool {
	return proven || s.Rank() >= r.MinSeverity.Rank()
}

// Touches reports whether an automatic review of a pull request changing
// files is wanted by review.paths.
func (r ReviewPolicy) Touches(files []string) bool {
	if len(r.Paths) == 0 {
		return true
	}
	return slices.ContainsFunc(files, func(f string) bool {
		return slices.ContainsFunc(r.Paths, func(g string) bool { ok, _ := doublestar.Match(g, f); return ok })
	})
}

// Starts decides whether the review policy asks for a review on event a;
// when it does not, the reason says which setting. Which files the pull
// request changes (review.paths) is decided once they are known.
func (r ReviewPolicy) Starts(a app.AutoReview) app.Decision {
	switch {
	case r.Auto != ReviewAutoOpened && r.Auto != ReviewAutoPushed:
		return app.Decision{Reason: "review.auto is off"}
	case a.Pushed() && r.Auto != ReviewAutoPushed:
		return app.Decision{Reason: fmt.Sprintf("review.auto is %s: a push is not reviewed by itself", r.Auto)}
	case a.Draft && !r.Drafts:
		return app.Decision{Reason: "the pull request is a draft, and review.drafts is false"}
	}
	return app.Decision{Allowed: true, Reason: fmt.Sprintf("review.auto is %s: pull_request %s", r.Auto, a.Action)}
}
