package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

func TestReviewPolicyDefaults(t *testing.T) {
	p, err := BuildPolicy(DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := p.Review
	if r.Auto != ReviewAutoOff || r.Drafts || len(r.Paths) != 0 || r.MinSeverity != app.SeverityMedium || r.MaxComments != 5 || r.BlockOn != BlockNone {
		t.Errorf("review defaults: %+v", r)
	}
	if l := p.ReviewLimits(); l.Iterations != 20 || l.WallClock != 30*time.Minute || l.DiffLines != p.Limits.DiffLines || l.Attempts != 1 {
		t.Errorf("review limits: %+v", l)
	}
}

func TestReviewPolicyAsWritten(t *testing.T) {
	p, err := BuildPolicy(openServer(), parseString(t, PolicyPath, `version: 1
review:
  auto: off
  drafts: true
  paths: ["src/**"]
  min_severity: low
  max_comments: 3
  block_on: proven
  limits: {iterations: 7}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Review
	if r.Auto != ReviewAutoOff || !r.Drafts || r.MinSeverity != app.SeverityLow || r.MaxComments != 3 || r.BlockOn != BlockProven || p.ReviewLimits().Iterations != 7 {
		t.Errorf("review: %+v", r)
	}
	if !r.Touches([]string{"README.md", "src/a/b.go"}) || r.Touches([]string{"README.md"}) {
		t.Errorf("review.paths [src/**] matched wrongly")
	}
	if !r.Posts(app.SeverityLow, true) || !r.Posts(app.SeverityLow, false) {
		t.Errorf("min_severity low refuses a low finding")
	}
	p.Review.MinSeverity = app.SeverityMedium
	if p.Review.Posts(app.SeverityLow, false) || !p.Review.Posts(app.SeverityLow, true) || !p.Review.Posts(app.SeverityHigh, false) {
		t.Errorf("min_severity medium: unproven low posted, or proven low or unproven high not posted")
	}
}

func TestReviewPolicyErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"review: {auto: always}", `.github/agent.yml:2: review.auto: "always" is not one of off, opened, pushed`},
		{"review: {min_severity: critical}", `review.min_severity: "critical" is not one of high, medium, low`},
		{"review: {max_comments: 0}", "review.max_comments: 0 is not a number of comments from 1 to 50"},
		{"review: {max_comments: 500}", "review.max_comments: 500 is not a number of comments from 1 to 50"},
		{"review: {block_on: all}", `review.block_on: "all" is not one of none, proven`},
		{"review: {paths: [\"[\"]}", `review.paths[0]: "[" is not a valid glob`},
		{"review: {limits: {iterations: -1}}", "review.limits.iterations: -1 must be more than zero"},
		{"review: {limits: {attempts: 2}}", "review.limits"},
		{"review: {drafts: maybe}", "review.drafts"},
		{"review: {colour: red}", "review"},
	} {
		r, err := ParsePolicy(PolicyPath, []byte("version: 1\n"+tc.yaml+"\n"))
		if err == nil {
			_, err = BuildPolicy(openServer(), r)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want one containing %q", tc.yaml, err, tc.want)
		}
	}
}

func TestParseReview(t *testing.T) {
	for body, want := range map[string]app.Parsed{
		"/agent review":                         {Action: app.Run, Verb: app.VerbReview},
		"/agent Review focus on the retry loop": {Action: app.Run, Verb: app.VerbReview, Instructions: "focus on the retry loop"},
		"> /agent review":                       {Action: app.Ignore, Reason: "no /agent command"},
	} {
		if got := app.ParseCommand(body, ""); got != want {
			t.Errorf("ParseCommand(%q) = %+v; want %+v", body, got, want)
		}
	}
}
