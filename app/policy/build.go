package policy

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/docker/go-units"
)

// builtinPolicyName is how messages and Policy.Source name the defaults.
const builtinPolicyName = "built-in defaults"

// builtinPolicy is the bottom layer of every policy. It is written as a
// policy file so that it is read by the same code as the files above it,
// and so that it documents itself. It has no checks: only a repository can
// say what done means. The sandbox image comes from the server config.
const builtinPolicy = `version: 1
trigger:
  command: /agent
  label: "agent:fix"
  roles: [admin, maintain, write]
  users: []
  approvers: [admin, maintain]
  allow_forks: false
setup: {network: false, run: [], timeout: 10m}
sandbox: {cpus: 2, memory: 4GiB, pids: 512, timeout: 45m, disk: 1GiB}
paths:
  allow: ["**"]
  deny: [".github/**", ".github/agent.yml", "**/CODEOWNERS", "**/*.pem", "**/.env*"]
limits: {iterations: 30, diff_lines: 600, files_changed: 25, tokens: 2000000, cost_usd: 10, wall_clock: 1h, context_tokens: 20000, attempts: 1}
tools: {write: auto, shell: auto}
pull_request: {draft: false, branch_prefix: agent/, labels: [agent], reviewers: [], on_failure: comment, signed_commits: true, ci_followups: 2}
review: {auto: "off", drafts: false, paths: [], min_severity: medium, max_comments: 5, block_on: none, limits: {iterations: 20, tokens: 1000000, cost_usd: 5, wall_clock: 30m}}
`

// defaultCheckTimeout applies to a check that names no timeout.
const defaultCheckTimeout = 10 * time.Minute

// BuildPolicy merges policy layers over the built-in defaults and the
// server config's policy section, lowest first — normally the organisation's
// .github repository's file, then the repository's own; nil layers (no such
// file) are skipped — and checks the result against the server's caps. A
// layer replaces each value it sets; lists (checks, paths.deny, labels…) are
// replaced whole, never appended. Settings the server config locks may not
// be set by the layers at all.
//
// A value beyond a cap is an error naming the cap, never silently clamped:
// an admin who asked for 80 iterations must learn they get at most 50. Only
// built-in defaults are lowered to the caps, since nobody wrote them. The
// error, an *Error, lists every problem with its file, line and field.
func BuildPolicy(server ServerConfig, layers ...*RawPolicy) (Policy, error) {
	base, err := ParsePolicy(builtinPolicyName, []byte(builtinPolicy))
	if err != nil {
		return Policy{}, fmt.Errorf("parse built-in policy: %w", err)
	}
	b := newPolicyBuilder(&server)
	b.apply(base, builtinLayer)
	var names []string
	if server.Policy != nil {
		b.apply(server.Policy, serverLayer)
		names = append(names, server.Policy.file)
	}
	for _, l := range layers {
		if l != nil {
			b.apply(l, repoLayer)
			names = append(names, l.file)
		}
	}
	b.finish()
	b.sortErrs()
	if len(names) == 0 {
		names = []string{builtinPolicyName}
	}
	b.p.Source = strings.Join(names, " < ")
	if err := fieldErrors(b.errs); err != nil {
		return Policy{}, err
	}
	return b.p, nil
}

// RequireChecks returns nil when the policy has checks, or the *Error that
// refuses a task without them, telling the admin how to add some: without
// a verifiable definition of done the agent cannot know when to stop. Not
// knowing the repository's files, it suggests the checks of every kind of
// repository agentbot knows; RequireChecksIn suggests those of its kind.
func (p Policy) RequireChecks() error {
	return p.RequireChecksIn(func(string) bool { return false })
}

// policyBuilder merges layers into a Policy, one setting at a time.
type policyBuilder struct {
	server *ServerConfig // nil: check values alone, without caps
	p      Policy
	origin map[string]*RawPolicy // path -> layer whose value p holds
	layer  *RawPolicy            // being applied
	kind   layerKind             // of the layer being applied
	errs   []fieldError
	order  []string // files in the order applied, for sorting errs
}

func newPolicyBuilder(server *ServerConfig) *policyBuilder {
	return &policyBuilder{server: server, origin: map[string]*RawPolicy{}}
}

// layerKind says who wrote a layer, which decides how it is bounded.
type layerKind int

const (
	// repoLayer is written by a repository's or organisation's admins:
	// bounded by the caps and the locks.
	repoLayer layerKind = iota
	// serverLayer is the server config's policy section: the operator's
	// own, so locks do not apply to it.
	serverLayer
	// builtinLayer is builtinPolicy: lowered to the caps, since nobody
	// chose its values.
	builtinLayer
)

// apply sets every value the layer sets, checking each.
func (b *policyBuilder) apply(r *RawPolicy, kind layerKind) {
	b.layer, b.kind = r, kind
	b.order = append(b.order, r.file)
	for _, s := range policySettings() {
		if kind == repoLayer && b.server != nil && b.server.locks(s.path) {
			if _, written := r.lines[s.path]; written {
				b.fail(s.path, "is fixed by this server's operator and cannot be set here; remove it")
			}
			continue
		}
		if s.apply(b, r) {
			b.origin[s.path] = r
		}
	}
}

// finish checks what only the merged result can tell, and fills in what
// the server provides.
func (b *policyBuilder) finish() {
	for _, t := range []struct {
		path string
		rule ToolRule
	}{{"tools.write", b.p.Tools.Write}, {"tools.shell", b.p.Tools.Shell}} {
		if t.rule.Policy == ApprovalAllowlist && len(t.rule.Allow) == 0 {
			b.failIn(b.origin[t.path+".policy"], t.path+".policy", "allowlist needs at least one entry in %s.allow", t.path)
		}
		// Attempts run side by side to their end: none can wait for an
		// approver while the others go on.
		if t.rule.Policy == ApprovalHuman && b.p.Limits.Attempts > 1 {
			b.failIn(b.origin["limits.attempts"], "limits.attempts", "%d attempts cannot pause for an approver, and %s.policy is human; set one of them otherwise",
				b.p.Limits.Attempts, t.path)
		}
	}
	// A check runs within the agent phase, so sandbox.timeout bounds it; a
	// check that names no timeout gets at most the phase's.
	if r := b.origin["checks"]; r != nil {
		for i := range b.p.Checks {
			c := &b.p.Checks[i]
			if c.Timeout <= b.p.Sandbox.Timeout {
				continue
			}
			if r.Checks[i].Timeout == nil {
				c.Timeout = b.p.Sandbox.Timeout
				continue
			}
			b.failIn(r, fmt.Sprintf("checks[%d].timeout", i), "%s is longer than sandbox.timeout (%s), which bounds the whole agent phase",
				shortDuration(c.Timeout), shortDuration(b.p.Sandbox.Timeout))
		}
	}
	if b.p.Sandbox.Image == "" && b.server != nil {
		b.p.Sandbox.Image = b.server.DefaultImage
	}
}

// sortErrs orders problems by file, in merge order, then by line.
func (b *policyBuilder) sortErrs() {
	order := func(file string) int { return slices.Index(b.order, file) }
	slices.SortStableFunc(b.errs, func(x, y fieldError) int {
		return cmp.Or(cmp.Compare(order(x.file), order(y.file)), cmp.Compare(x.line, y.line))
	})
}

func (b *policyBuilder) fail(path, format string, args ...any) {
	b.failIn(b.layer, path, format, args...)
}

func (b *policyBuilder) failIn(r *RawPolicy, path, format string, args ...any) {
	if r == nil {
		r = b.layer
	}
	b.errs = append(b.errs, fieldError{file: r.file, line: r.lineOf(path), path: path, msg: fmt.Sprintf(format, args...)})
}

// lineOf returns the line of the value at path or, when it is absent (a
// missing key), of the nearest enclosing value.
func (r *RawPolicy) lineOf(path string) int {
	for path != "" {
		if l, ok := r.lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// policySetting is one thing a policy file may set; policySettings is the
// table of everything a repository may override. apply reports whether the
// layer set the value, after checking it and storing it into the Policy.
type policySetting struct {
	path  string
	apply func(b *policyBuilder, r *RawPolicy) bool
}

// valueSetting is a setting holding one value, converted by conv; conv
// returns a problem sentence instead of an error so that the builder can
// place it at its file, line and field.
func valueSetting[R, V any](path string, raw func(*RawPolicy) *R, dst func(*Policy) *V, conv func(*policyBuilder, R) (V, string)) policySetting {
	return policySetting{path, func(b *policyBuilder, r *RawPolicy) bool {
		rv := raw(r)
		if rv == nil {
			return false
		}
		v, problem := conv(b, *rv)
		if problem != "" {
			b.fail(path, "%s", problem)
			return false
		}
		*dst(&b.p) = v
		return true
	}}
}

// listSetting is a setting holding a list, each item checked by check
// (which returns a problem sentence or "").
func listSetting[T any](path string, raw func(*RawPolicy) []T, dst func(*Policy) *[]T, check func(T) string) policySetting {
	return policySetting{path, func(b *policyBuilder, r *RawPolicy) bool {
		items := raw(r)
		if items == nil {
			return false
		}
		ok := true
		for i, it := range items {
			if problem := check(it); problem != "" {
				b.fail(fmt.Sprintf("%s[%d]", path, i), "%s", problem)
				ok = false
			}
		}
		if ok {
			*dst(&b.p) = slices.Clone(items)
		}
		return ok
	}}
}

// policySettings returns the table of everything a policy file may set, in
// file order. Each value's checks and caps live in its row.
func policySettings() []policySetting {
	return append([]policySetting{
		valueSetting("version", func(r *RawPolicy) *int { return r.Version }, func(p *Policy) *int { return &p.Version }, checkVersion),
		valueSetting("trigger.command", func(r *RawPolicy) *string { return r.Trigger.Command }, func(p *Policy) *string { return &p.Trigger.Command }, checkCommand),
		valueSetting("trigger.label", func(r *RawPolicy) *string { return r.Trigger.Label }, func(p *Policy) *string { return &p.Trigger.Label }, asIs[string]),
		listSetting("trigger.roles", func(r *RawPolicy) []string { return r.Trigger.Roles }, func(p *Policy) *[]string { return &p.Trigger.Roles }, checkRole),
		listSetting("trigger.users", func(r *RawPolicy) []string { return r.Trigger.Users }, func(p *Policy) *[]string { return &p.Trigger.Users }, checkLogin),
		listSetting("trigger.approvers", func(r *RawPolicy) []string { return r.Trigger.Approvers }, func(p *Policy) *[]string { return &p.Trigger.Approvers }, checkRoleOrLogin),
		valueSetting("trigger.allow_forks", func(r *RawPolicy) *bool { return r.Trigger.AllowForks }, func(p *Policy) *bool { return &p.Trigger.AllowForks }, asIs[bool]),
		{"checks", applyChecks},
		valueSetting("setup.network", func(r *RawPolicy) *bool { return r.Setup.Network }, func(p *Policy) *bool { return &p.Setup.Network }, checkSetupNetwork),
		listSetting("setup.run", func(r *RawPolicy) []string { return r.Setup.Run }, func(p *Policy) *[]string { return &p.Setup.Run }, checkNotBlank("a command line")),
		valueSetting("setup.timeout", func(r *RawPolicy) *RawDuration { return r.Setup.Timeout }, func(p *Policy) *time.Duration { return &p.Setup.Timeout }, checkDuration(nil)),
		listSetting("setup.cache_key_files", func(r *RawPolicy) []string { return r.Setup.CacheKeyFiles }, func(p *Policy) *[]string { return &p.Setup.CacheKeyFiles }, checkGlob),
		valueSetting("sandbox.image", func(r *RawPolicy) *string { return r.Sandbox.Image }, func(p *Policy) *string { return &p.Sandbox.Image }, checkImage),
		valueSetting("sandbox.cpus", func(r *RawPolicy) *float64 { return r.Sandbox.CPUs }, func(p *Policy) *float64 { return &p.Sandbox.CPUs }, checkPositive(func(c Caps) float64 { return c.Sandbox.CPUs })),
		valueSetting("sandbox.memory", func(r *RawPolicy) *RawSize { return r.Sandbox.Memory }, func(p *Policy) *int64 { return &p.Sandbox.Memory }, checkSize(MinSandboxMemory, func(c Caps) int64 { return c.Sandbox.Memory })),
		valueSetting("sandbox.pids", func(r *RawPolicy) *int64 { return r.Sandbox.Pids }, func(p *Policy) *int64 { return &p.Sandbox.Pids }, checkAtLeast(MinSandboxPids, func(c Caps) int64 { return c.Sandbox.Pids })),
		valueSetting("sandbox.timeout", func(r *RawPolicy) *RawDuration { return r.Sandbox.Timeout }, func(p *Policy) *time.Duration { return &p.Sandbox.Timeout }, checkDuration(func(c Caps) time.Duration { return c.Sandbox.Timeout })),
		valueSetting("sandbox.disk", func(r *RawPolicy) *RawSize { return r.Sandbox.Disk }, func(p *Policy) *int64 { return &p.Sandbox.Disk }, checkSize(MinSandboxDisk, func(c Caps) int64 { return c.Sandbox.Disk })),
		listSetting("paths.allow", func(r *RawPolicy) []string { return r.Paths.Allow }, func(p *Policy) *[]string { return &p.Paths.Allow }, checkGlob),
		listSetting("paths.deny", func(r *RawPolicy) []string { return r.Paths.Deny }, func(p *Policy) *[]string { return &p.Paths.Deny }, checkGlob),
		valueSetting("limits.iterations", func(r *RawPolicy) *int { return r.Limits.Iterations }, func(p *Policy) *int { return &p.Limits.Iterations }, checkPositive(func(c Caps) int { return c.Limits.Iterations })),
		valueSetting("limits.diff_lines", func(r *RawPolicy) *int { return r.Limits.DiffLines }, func(p *Policy) *int { return &p.Limits.DiffLines }, checkPositive(func(c Caps) int { return c.Limits.DiffLines })),
		valueSetting("limits.files_changed", func(r *RawPolicy) *int { return r.Limits.FilesChanged }, func(p *Policy) *int { return &p.Limits.FilesChanged }, checkPositive(func(c Caps) int { return c.Limits.FilesChanged })),
		valueSetting("limits.tokens", func(r *RawPolicy) *int64 { return r.Limits.Tokens }, func(p *Policy) *int64 { return &p.Limits.Tokens }, checkPositive(func(c Caps) int64 { return c.Limits.Tokens })),
		valueSetting("limits.cost_usd", func(r *RawPolicy) *float64 { return r.Limits.CostUSD }, func(p *Policy) *float64 { return &p.Limits.CostUSD }, checkPositive(func(c Caps) float64 { return c.Limits.CostUSD })),
		valueSetting("limits.wall_clock", func(r *RawPolicy) *RawDuration { return r.Limits.WallClock }, func(p *Policy) *time.Duration { return &p.Limits.WallClock }, checkDuration(func(c Caps) time.Duration { return c.Limits.WallClock })),
		valueSetting("limits.context_tokens", func(r *RawPolicy) *int { return r.Limits.ContextTokens }, func(p *Policy) *int { return &p.Limits.ContextTokens }, checkPositive(func(c Caps) int { return c.Limits.ContextTokens })),
		valueSetting("limits.attempts", func(r *RawPolicy) *int { return r.Limits.Attempts }, func(p *Policy) *int { return &p.Limits.Attempts }, checkPositive(func(c Caps) int { return c.Limits.Attempts })),
		valueSetting("tools.write.policy", func(r *RawPolicy) *Approval { return r.Tools.Write.Policy }, func(p *Policy) *Approval { return &p.Tools.Write.Policy }, checkApproval),
		listSetting("tools.write.allow", func(r *RawPolicy) []string { return r.Tools.Write.Allow }, func(p *Policy) *[]string { return &p.Tools.Write.Allow }, checkGlob),
		valueSetting("tools.shell.policy", func(r *RawPolicy) *Approval { return r.Tools.Shell.Policy }, func(p *Policy) *Approval { return &p.Tools.Shell.Policy }, checkApproval),
		listSetting("tools.shell.allow", func(r *RawPolicy) []string { return r.Tools.Shell.Allow }, func(p *Policy) *[]string { return &p.Tools.Shell.Allow }, checkGlob),
		valueSetting("model.edit", func(r *RawPolicy) *string { return r.Model.Edit }, func(p *Policy) *string { return &p.Model.Edit }, asIs[string]),
		valueSetting("model.fast", func(r *RawPolicy) *string { return r.Model.Fast }, func(p *Policy) *string { return &p.Model.Fast }, asIs[string]),
		valueSetting("model.vision", func(r *RawPolicy) *bool { return r.Model.Vision }, func(p *Policy) *bool { return &p.Model.Vision }, asIs[bool]),
		listSetting("model.attempts", func(r *RawPolicy) []string { return r.Model.Attempts }, func(p *Policy) *[]string { return &p.Model.Attempts }, checkNotBlank("a model name")),
		valueSetting("model.temperature", func(r *RawPolicy) *float64 { return r.Model.Temperature }, func(p *Policy) **float64 { return &p.Model.Temperature }, optional(checkTemperature)),
		listSetting("model.temperatures", func(r *RawPolicy) []float64 { return r.Model.Temperatures }, func(p *Policy) *[]float64 { return &p.Model.Temperatures }, checkTemperature),
		valueSetting("pull_request.draft", func(r *RawPolicy) *bool { return r.PullRequest.Draft }, func(p *Policy) *bool { return &p.PullRequest.Draft }, asIs[bool]),
		valueSetting("pull_request.branch_prefix", func(r *RawPolicy) *string { return r.PullRequest.BranchPrefix }, func(p *Policy) *string { return &p.PullRequest.BranchPrefix }, checkBranchPrefix),
		listSetting("pull_request.labels", func(r *RawPolicy) []string { return r.PullRequest.Labels }, func(p *Policy) *[]string { return &p.PullRequest.Labels }, checkNotBlank("a label")),
		listSetting("pull_request.reviewers", func(r *RawPolicy) []string { return r.PullRequest.Reviewers }, func(p *Policy) *[]string { return &p.PullRequest.Reviewers }, checkLogin),
		valueSetting("pull_request.on_failure", func(r *RawPolicy) *string { return r.PullRequest.OnFailure }, func(p *Policy) *string { return &p.PullRequest.OnFailure }, checkOneOf("comment", "draft_pr")),
		valueSetting("pull_request.signed_commits", func(r *RawPolicy) *bool { return r.PullRequest.SignedCommits }, func(p *Policy) *bool { return &p.PullRequest.SignedCommits }, asIs[bool]),
		valueSetting("pull_request.ci_followups", func(r *RawPolicy) *int { return r.PullRequest.CIFollowups }, func(p *Policy) *int { return &p.PullRequest.CIFollowups }, checkNotNegative),
		valueSetting("quality.reproduce", func(r *RawPolicy) *string { return r.Quality.Reproduce }, func(p *Policy) *Reproduce { return &p.Quality.Reproduce }, checkReproduce),
		valueSetting("quality.plan", func(r *RawPolicy) *string { return r.Quality.Plan }, func(p *Policy) *PlanMode { return &p.Quality.Plan }, checkPlan),
	}, reviewSettings()...)
}

// applyChecks replaces the checks with the layer's list, defaulting each
// name to its command line and each timeout to defaultCheckTimeout.
func applyChecks(b *policyBuilder, r *RawPolicy) bool {
	if r.Checks == nil {
		return false
	}
	checks := make([]Check, 0, len(r.Checks))
	first := map[string]int{}
	ok := true
	for i, rc := range r.Checks {
		path := fmt.Sprintf("checks[%d]", i)
		if rc.Run == nil || strings.TrimSpace(*rc.Run) == "" {
			b.fail(path+".run", "a check needs a command line to run")
			ok = false
			continue
		}
		c := Check{Name: *rc.Run, Run: *rc.Run, Timeout: defaultCheckTimeout}
		if rc.Name != nil {
			c.Name = *rc.Name
		}
		if j, dup := first[c.Name]; dup {
			b.fail(path+".name", "%q is already the name of checks[%d]; check names must differ", c.Name, j)
			ok = false
		}
		first[c.Name] = i
		if rc.Timeout != nil {
			t, problem := checkDuration(nil)(b, *rc.Timeout)
			if problem != "" {
				b.fail(path+".timeout", "%s", problem)
				ok = false
			}
			c.Timeout = t
		}
		checks = append(checks, c)
	}
	if ok {
		b.p.Checks = checks
	}
	return ok
}

// The converters below return the value to store or a problem sentence,
// which the builder prefixes with the file, line and field.

func asIs[T any](_ *policyBuilder, v T) (T, string) { return v, "" }

// optional stores a value that check accepts by pointer, for a setting
// whose absence means something no value does.
func optional[T any](check func(T) string) func(*policyBuilder, T) (*T, string) {
	return func(_ *policyBuilder, v T) (*T, string) {
		if problem := check(v); problem != "" {
			return nil, problem
		}
		return &v, ""
	}
}

// checkTemperature checks a sampling temperature against the range of
// OpenAI's chat completions, which compatible servers share.
func checkTemperature(v float64) string {
	if !(v >= 0 && v <= 2) { // written so that NaN fails too
		return fmt.Sprintf("%v is not a sampling temperature; write a number from 0 to 2", v)
	}
	return ""
}

func checkVersion(_ *policyBuilder, v int) (int, string) {
	if v != 1 {
		return 0, fmt.Sprintf("%d is not a version this agentbot reads; write version: 1", v)
	}
	return v, ""
}

func checkCommand(_ *policyBuilder, v string) (string, string) {
	if !strings.HasPrefix(v, "/") || len(v) < 2 || strings.ContainsFunc(v, unicode.IsSpace) {
		return "", fmt.Sprintf("%q must be a slash and a word, such as /agent", v)
	}
	return v, ""
}

// roleNames lists GitHub's repository roles, as the collaborator-permission
// API returns them in role_name.
const roleNames = "admin, maintain, write, triage, read"

func isRole(v string) bool {
	switch v {
	case "admin", "maintain", "write", "triage", "read":
		return true
	}
	return false
}

func checkRole(v string) string {
	if !isRole(v) {
		return fmt.Sprintf("%q is not a repository role (%s)", v, roleNames)
	}
	return ""
}

// githubLoginRE matches GitHub logins: letters, digits and single inner hyphens.
var githubLoginRE = regexp.MustCompile(`^[A-Za-z0-9](?:-?[A-Za-z0-9])*$`)

func checkLogin(v string) string {
	if len(v) > 39 || !githubLoginRE.MatchString(v) {
		return fmt.Sprintf("%q is not a GitHub login", v)
	}
	return ""
}

// checkRoleOrLogin accepts a role name or a login: role names are reserved.
func checkRoleOrLogin(v string) string {
	if !isRole(v) && checkLogin(v) != "" {
		return fmt.Sprintf("%q is neither a repository role (%s) nor a GitHub login", v, roleNames)
	}
	return ""
}

func checkNotBlank(what string) func(string) string {
	return func(v string) string {
		if strings.TrimSpace(v) == "" {
			return "is empty; write " + what
		}
		return ""
	}
}

func checkGlob(v string) string {
	if v == "" || !doublestar.ValidatePattern(v) {
		return fmt.Sprintf("%q is not a valid glob (see https://github.com/bmatcuk/doublestar#patterns)", v)
	}
	return ""
}

func checkOneOf(allowed ...string) func(*policyBuilder, string) (string, string) {
	return func(_ *policyBuilder, v string) (string, string) {
		if !slices.Contains(allowed, v) {
			return "", fmt.Sprintf("%q is not one of %s", v, strings.Join(allowed, ", "))
		}
		return v, ""
	}
}

func checkApproval(b *policyBuilder, v Approval) (Approval, string) {
	s, problem := checkOneOf(string(ApprovalAuto), string(ApprovalAllowlist), string(ApprovalHuman), string(ApprovalOff))(b, string(v))
	return Approval(s), problem
}

// branchPrefixRE rejects what git refuses in a branch name, roughly as
// git check-ref-format does for the characters a prefix may hold.
var branchPrefixRE = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)

func checkBranchPrefix(_ *policyBuilder, v string) (string, string) {
	if !branchPrefixRE.MatchString(v) || strings.Contains(v, "..") || strings.Contains(v, "//") ||
		strings.HasPrefix(v, "/") || strings.HasPrefix(v, "-") || strings.HasPrefix(v, ".") {
		return "", fmt.Sprintf("%q cannot start a git branch name; use letters, digits, '-', '_', '.' and '/', such as agent/", v)
	}
	return v, ""
}

func checkSetupNetwork(b *policyBuilder, v bool) (bool, string) {
	if v && b.server != nil && !b.server.SetupNetwork {
		if b.kind == builtinLayer {
			return false, ""
		}
		return false, "this server does not allow network during setup; set it to false, or ask the operator"
	}
	return v, ""
}

func checkImage(b *policyBuilder, v string) (string, string) {
	if strings.TrimSpace(v) == "" {
		return "", "is empty; name a container image"
	}
	if b.server == nil || imageAllowed(b.server.Images, v) {
		return v, ""
	}
	return "", fmt.Sprintf("%q is not an image this server allows (%s)", v, strings.Join(b.server.Images, ", "))
}

// capNumber is what caps bound.
type capNumber interface {
	~int | ~int64 | ~float64
}

// checkPositive checks that a number is above zero and within the server's cap
// (zero: no cap). capOf may be nil for values without a cap.
func checkPositive[T capNumber](capOf func(Caps) T) func(*policyBuilder, T) (T, string) {
	return func(b *policyBuilder, v T) (T, string) {
		return withinCap(b, v, fmt.Sprint(v), capOf, func(c T) string { return fmt.Sprint(c) })
	}
}

// checkNotNegative checks a count for which zero means "none".
func checkNotNegative(_ *policyBuilder, v int) (int, string) {
	if v < 0 {
		return 0, fmt.Sprintf("%d is negative; 0 turns it off", v)
	}
	return v, ""
}

func checkDuration(capOf func(Caps) time.Duration) func(*policyBuilder, RawDuration) (time.Duration, string) {
	return func(b *policyBuilder, v RawDuration) (time.Duration, string) {
		d, problem := parsePolicyDuration(v)
		if problem != "" {
			return 0, problem
		}
		return withinCap(b, d, string(v), capOf, shortDuration)
	}
}

// The least a sandbox may be given. Below them the container cannot start
// its executor (a Go program with a few threads) and a shell, so a task
// would only fail later, on the worker, with the engine's error.
const (
	MinSandboxMemory = 64 << 20
	MinSandboxPids   = 32
	// A build writes objects into the tree; less than this fails most.
	MinSandboxDisk = 16 << 20
)

// checkAtLeast is checkPositive with a floor of least.
func checkAtLeast[T capNumber](least T, capOf func(Caps) T) func(*policyBuilder, T) (T, string) {
	return func(b *policyBuilder, v T) (T, string) {
		if v > 0 && v < least {
			return 0, fmt.Sprintf("%v is below the least a sandbox can run with, %v", v, least)
		}
		return withinCap(b, v, fmt.Sprint(v), capOf, func(c T) string { return fmt.Sprint(c) })
	}
}

func checkSize(least int64, capOf func(Caps) int64) func(*policyBuilder, RawSize) (int64, string) {
	return func(b *policyBuilder, v RawSize) (int64, string) {
		n, problem := parsePolicySize(v)
		if problem != "" {
			return 0, problem
		}
		if n > 0 && n < least {
			return 0, fmt.Sprintf("%s is below the least a sandbox can run with, %s", v, units.BytesSize(float64(least)))
		}
		return withinCap(b, n, string(v), capOf, func(c int64) string { return units.BytesSize(float64(c)) })
	}
}

// withinCap returns v if it is positive and within the cap; built-in
// defaults above a cap are lowered to it, anything written is refused.
func withinCap[T capNumber](b *policyBuilder, v T, written string, capOf func(Caps) T, format func(T) string) (T, string) {
	if v <= 0 {
		return 0, fmt.Sprintf("%s must be more than zero", written)
	}
	if capOf == nil || b.server == nil {
		return v, ""
	}
	if c := capOf(b.server.Max); c > 0 && v > c {
		if b.kind == builtinLayer {
			return c, ""
		}
		return 0, fmt.Sprintf("%s is above this server's cap of %s", written, format(c))
	}
	return v, ""
}

// shortDuration writes d as an admin would: 2h rather than 2h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

func parsePolicyDuration(v RawDuration) (time.Duration, string) {
	d, err := time.ParseDuration(string(v))
	if err != nil {
		return 0, fmt.Sprintf("%q is not a duration such as 90s, 15m or 1h30m", string(v))
	}
	return d, ""
}

// parsePolicySize reads binary sizes the way docker run --memory does: 4g, 4GiB
// and 4GB are all 4×1024³ bytes; a bare number is bytes.
func parsePolicySize(v RawSize) (int64, string) {
	n, err := units.RAMInBytes(string(v))
	if err != nil {
		return 0, fmt.Sprintf("%q is not a size such as 512MiB or 4GiB", string(v))
	}
	return n, ""
}
