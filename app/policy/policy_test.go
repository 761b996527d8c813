package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

// openServer is a server config that bounds nothing, so that a test sees
// what a file says by itself.
func openServer() ServerConfig {
	return ServerConfig{SetupNetwork: true, DefaultImage: "agentbot-sandbox:dev"}
}

func readPolicy(t *testing.T, file string) *RawPolicy {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParsePolicy(PolicyPath, data)
	if err != nil {
		t.Fatalf("ParsePolicy(%s): %v", file, err)
	}
	return r
}

func parseString(t *testing.T, name, yaml string) *RawPolicy {
	t.Helper()
	r, err := ParsePolicy(name, []byte(yaml))
	if err != nil {
		t.Fatalf("ParsePolicy(%s): %v", name, err)
	}
	return r
}

func TestDesignExample(t *testing.T) {
	p, err := BuildPolicy(openServer(), readPolicy(t, "testdata/valid/design-example.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{
		Version: 1,
		Trigger: Trigger{Command: "/agent", Label: "agent:fix", Roles: []string{"admin", "maintain", "write"}, Users: []string{},
			Approvers: []string{"admin", "maintain"}},
		Checks: []Check{
			{Name: "build", Run: "go build ./...", Timeout: 5 * time.Minute},
			{Name: "test", Run: "go test ./...", Timeout: 15 * time.Minute},
		},
		Setup:   Setup{Network: true, Run: []string{"go mod download"}, Timeout: 10 * time.Minute},
		Sandbox: SandboxSpec{Image: "golang:1.26", CPUs: 2, Memory: 4 << 30, Pids: 512, Timeout: 45 * time.Minute, Disk: 1 << 30},
		Paths:   Paths{Allow: []string{"**"}, Deny: []string{".github/workflows/**", "**/*.pem", "**/.env*"}},
		Limits:  Limits{Iterations: 30, DiffLines: 600, FilesChanged: 25, Tokens: 2000000, CostUSD: 10, WallClock: time.Hour, ContextTokens: 20000, Attempts: 1},
		Tools: Tools{
			Write: ToolRule{Policy: ApprovalAuto},
			Shell: ToolRule{Policy: ApprovalAllowlist, Allow: []string{"go test ./...", "go vet ./...", "make lint"}},
		},
		Model:       Models{Edit: "plugsky-coder", Fast: "plugsky-coder-fast"},
		PullRequest: app.PullRequestSpec{BranchPrefix: "agent/", Labels: []string{"agent"}, Reviewers: []string{}, OnFailure: "comment", SignedCommits: true, CIFollowups: 2},
		Review: ReviewPolicy{Auto: ReviewAutoOff, Paths: []string{}, MinSeverity: app.SeverityMedium, MaxComments: 5, BlockOn: BlockNone,
			Limits: Limits{Iterations: 20, Tokens: 1000000, CostUSD: 5, WallClock: 30 * time.Minute}},
		Source: PolicyPath,
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

func TestEveryKeySet(t *testing.T) {
	p, err := BuildPolicy(openServer(), readPolicy(t, "testdata/valid/full.yml"))
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{
		Version: 1,
		Trigger: Trigger{Command: "/bot", Label: "bot:fix", Roles: []string{"admin", "maintain"}, Users: []string{"octocat"},
			Approvers: []string{"admin", "hubot"}, AllowForks: true},
		Checks: []Check{
			{Name: "vet", Run: "go vet ./...", Timeout: 2 * time.Minute},
			{Name: "go test -short ./...", Run: "go test -short ./...", Timeout: defaultCheckTimeout},
		},
		Setup:   Setup{Network: true, Run: []string{"go mod download", "make tools"}, Timeout: 5 * time.Minute},
		Sandbox: SandboxSpec{Image: "agentbot-sandbox:go", CPUs: 1.5, Memory: 512 << 20, Pids: 256, Timeout: 30 * time.Minute, Disk: 2 << 30},
		Paths:   Paths{Allow: []string{"src/**", "docs/*.md"}, Deny: []string{"src/vendor/**"}},
		Limits:  Limits{Iterations: 12, DiffLines: 300, FilesChanged: 10, Tokens: 500000, CostUSD: 2.5, WallClock: 40 * time.Minute, ContextTokens: 8000, Attempts: 1},
		Tools: Tools{
			Write: ToolRule{Policy: ApprovalAllowlist, Allow: []string{"src/**"}},
			Shell: ToolRule{Policy: ApprovalHuman},
		},
		Model: Models{Edit: "big-model", Fast: "small-model", Vision: true, Attempts: []string{"big-model", "other-model"},
			Temperature: new(0.2), Temperatures: []float64{0, 0.7, 1}},
		PullRequest: app.PullRequestSpec{Draft: true, BranchPrefix: "bot/", Labels: []string{"bot", "needs-review"}, Reviewers: []string{"octocat"}, OnFailure: "draft_pr", SignedCommits: false},
		Quality:     Quality{Reproduce: ReproduceRequired, Plan: PlanApprove},
		Review: ReviewPolicy{Auto: ReviewAutoPushed, Drafts: true, Paths: []string{"src/**"}, MinSeverity: app.SeverityHigh, MaxComments: 3, BlockOn: BlockProven,
			Limits: Limits{Iterations: 8, Tokens: 200000, CostUSD: 1.5, WallClock: 20 * time.Minute}},
		Source: PolicyPath,
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

// TestEveryFieldIsMerged proves that the settings table has a row for each
// value of RawPolicy, so that no key is decoded and then ignored.
func TestEveryFieldIsMerged(t *testing.T) {
	var leaves []string
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for f := range typ.Fields() {
			key := yamlKey(f)
			if key == "" {
				continue
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, yamlPathJoin(path, key))
			} else {
				leaves = append(leaves, yamlPathJoin(path, key))
			}
		}
	}
	walk(reflect.TypeFor[RawPolicy](), "")
	var rows []string
	for _, s := range policySettings() {
		rows = append(rows, s.path)
	}
	if !reflect.DeepEqual(rows, leaves) {
		t.Errorf("settings table:\n%q\nraw fields:\n%q", rows, leaves)
	}
}

func TestBuiltinDefaults(t *testing.T) {
	p, err := BuildPolicy(DefaultServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != "built-in defaults" || p.Sandbox.Image != "agentbot-sandbox:dev" || p.Setup.Network ||
		p.Trigger.Command != app.DefaultCommand || len(p.Checks) != 0 || p.Tools.Shell.Policy != ApprovalAuto {
		t.Errorf("defaults: %+v", p)
	}
}

// TestBrokenFiles checks the exact message of every kind of mistake; the
// files in testdata/invalid are checked against testdata/server.yml.
func TestBrokenFiles(t *testing.T) {
	server, err := LoadServerConfig("testdata/server.yml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		want []string
	}{
		{"unknown-key.yml", []string{`.github/agent.yml:4: trigger.lable: unknown key (did you mean "label"?)`}},
		{"wrong-type.yml", []string{`.github/agent.yml:4: limits.iterations: "thirty" is not a whole number`}},
		{"bad-glob.yml", []string{`.github/agent.yml:5: paths.deny[0]: "src/[a-z" is not a valid glob (see https://github.com/bmatcuk/doublestar#patterns)`}},
		{"bad-duration.yml", []string{`.github/agent.yml:2: checks[0].timeout: "5 minutes" is not a duration such as 90s, 15m or 1h30m`}},
		{"bad-size.yml", []string{`.github/agent.yml:4: sandbox.memory: "4 gigs" is not a size such as 512MiB or 4GiB`}},
		{"bad-approval.yml", []string{`.github/agent.yml:4: tools.shell.policy: "sometimes" is not one of auto, allowlist, human, off`}},
		{"allowlist-empty.yml", []string{`.github/agent.yml:4: tools.shell.policy: allowlist needs at least one entry in tools.shell.allow`}},
		{"duplicate-check.yml", []string{`.github/agent.yml:3: checks[1].name: "test" is already the name of checks[0]; check names must differ`}},
		{"empty-check-run.yml", []string{
			`.github/agent.yml:2: checks[0].run: a check needs a command line to run`,
			`.github/agent.yml:3: checks[1].run: a check needs a command line to run`,
		}},
		{"above-cap.yml", []string{
			`.github/agent.yml:4: limits.iterations: 80 is above this server's cap of 50`,
			`.github/agent.yml:5: limits.wall_clock: 3h is above this server's cap of 2h`,
			`.github/agent.yml:6: limits.context_tokens: 90000 is above this server's cap of 40000`,
			`.github/agent.yml:8: sandbox.memory: 16GiB is above this server's cap of 8GiB`,
		}},
		{"below-minimum.yml", []string{
			`.github/agent.yml:4: sandbox.memory: 12 is below the least a sandbox can run with, 64MiB`,
			`.github/agent.yml:5: sandbox.pids: 4 is below the least a sandbox can run with, 32`,
			`.github/agent.yml:6: sandbox.disk: 1MiB is below the least a sandbox can run with, 16MiB`,
		}},
		{"image-not-allowed.yml", []string{`.github/agent.yml:4: sandbox.image: "ubuntu:24.04" is not an image this server allows (agentbot-sandbox:*)`}},
		{"setup-network.yml", []string{`.github/agent.yml:4: setup.network: this server does not allow network during setup; set it to false, or ask the operator`}},
		{"structure.yml", []string{
			`.github/agent.yml:2: checks: expected a list, not a mapping`,
			`.github/agent.yml:4: sandbox.cpus: expected a single value, not a list`,
			`.github/agent.yml:5: sandbox.pids: 0 must be more than zero`,
			`.github/agent.yml:6: version: is set twice (first on line 1)`,
		}},
		{"bad-values.yml", []string{
			`.github/agent.yml:1: version: 2 is not a version this agentbot reads; write version: 1`,
			`.github/agent.yml:3: trigger.command: "agent" must be a slash and a word, such as /agent`,
			`.github/agent.yml:4: trigger.roles[1]: "owner" is not a repository role (admin, maintain, write, triage, read)`,
			`.github/agent.yml:5: trigger.users[0]: "not a login" is not a GitHub login`,
			`.github/agent.yml:7: pull_request.branch_prefix: "-x" cannot start a git branch name; use letters, digits, '-', '_', '.' and '/', such as agent/`,
			`.github/agent.yml:8: pull_request.on_failure: "retry" is not one of comment, draft_pr`,
			`.github/agent.yml:9: pull_request.ci_followups: -1 is negative; 0 turns it off`,
			`.github/agent.yml:11: quality.reproduce: "always" is not one of required, preferred, off`,
		}},
		{"bad-temperature.yml", []string{
			`.github/agent.yml:3: model.temperature: 2.5 is not a sampling temperature; write a number from 0 to 2`,
			`.github/agent.yml:4: model.temperatures[1]: -0.1 is not a sampling temperature; write a number from 0 to 2`,
		}},
		{"syntax.yml", []string{`.github/agent.yml:2: not valid YAML: did not find expected ',' or '}'`}},
	}
	files, err := filepath.Glob("testdata/invalid/*.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(tests) {
		t.Errorf("%d files in testdata/invalid, %d cases: every broken file needs its message checked", len(files), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/invalid", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParsePolicy(PolicyPath, data)
			if err == nil {
				_, err = BuildPolicy(server, r)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if code := app.ErrorCode(err); code != app.EInvalid {
				t.Errorf("code %q, want %q", code, app.EInvalid)
			}
			if got, want := app.ErrorMessage(err), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("message:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestMergeOrder(t *testing.T) {
	org := parseString(t, "acme/.github:.github/agent.yml", `
checks: [{name: test, run: make test}]
limits: {iterations: 20, tokens: 1000}
pull_request: {labels: [org-label], draft: true}
`)
	repo := parseString(t, "acme/app:.github/agent.yml", `
limits: {iterations: 10}
pull_request: {labels: [repo-label]}
`)
	p, err := BuildPolicy(openServer(), org, nil, repo)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Iterations != 10 {
		t.Errorf("iterations %d: the repository's file must win over the organisation's", p.Limits.Iterations)
	}
	if p.Limits.Tokens != 1000 || !p.PullRequest.Draft || len(p.Checks) != 1 {
		t.Errorf("what the repository does not set must come from the organisation: %+v", p)
	}
	if !reflect.DeepEqual(p.PullRequest.Labels, []string{"repo-label"}) {
		t.Errorf("labels %q: lists are replaced, not appended", p.PullRequest.Labels)
	}
	if p.Limits.DiffLines != 600 {
		t.Errorf("diff_lines %d: what no file sets keeps the built-in default", p.Limits.DiffLines)
	}
	if want := "acme/.github:.github/agent.yml < acme/app:.github/agent.yml"; p.Source != want {
		t.Errorf("Source %q, want %q", p.Source, want)
	}

	// A repository can remove the organisation's checks, and is then refused.
	none := parseString(t, "acme/app:.github/agent.yml", "checks: []\n")
	p, err = BuildPolicy(openServer(), org, none)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Checks) != 0 || p.RequireChecks() == nil {
		t.Errorf("checks: [] must clear the organisation's checks, got %+v", p.Checks)
	}
}

func TestMergeErrorsNameTheirFile(t *testing.T) {
	server := openServer()
	server.Max.Limits.Iterations = 25
	org := parseString(t, "acme/.github:.github/agent.yml", "tools: {shell: allowlist}\nlimits: {iterations: 40}\n")
	repo := parseString(t, "acme/app:.github/agent.yml", "\nlimits: {iterations: 30}\n")
	_, err := BuildPolicy(server, org, repo)
	want := "acme/.github:.github/agent.yml:1: tools.shell.policy: allowlist needs at least one entry in tools.shell.allow\n" +
		"acme/.github:.github/agent.yml:2: limits.iterations: 40 is above this server's cap of 25\n" +
		"acme/app:.github/agent.yml:2: limits.iterations: 30 is above this server's cap of 25"
	if got := app.ErrorMessage(err); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCaps(t *testing.T) {
	server := openServer()
	server.Max = Caps{Limits: Limits{Iterations: 20, CostUSD: 1.5}, Sandbox: SandboxSpec{Memory: 1 << 30, Timeout: 20 * time.Minute, Disk: 512 << 20}}
	server.Images = []string{"agentbot-sandbox:*", "ghcr.io/acme/*"}

	// Built-in defaults above a cap are lowered to it: nobody asked for them.
	p, err := BuildPolicy(server)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Iterations != 20 || p.Limits.CostUSD != 1.5 || p.Sandbox.Memory != 1<<30 || p.Sandbox.Timeout != 20*time.Minute || p.Sandbox.Disk != 512<<20 {
		t.Errorf("defaults not lowered to the caps: %+v %+v", p.Limits, p.Sandbox)
	}

	// A value at the cap and an allowed image are accepted.
	r := parseString(t, PolicyPath, "limits: {iterations: 20, cost_usd: 1.5}\nsandbox: {memory: 1GiB, image: ghcr.io/acme/go}\n")
	if p, err = BuildPolicy(server, r); err != nil || p.Sandbox.Image != "ghcr.io/acme/go" {
		t.Errorf("values at the caps: %v, image %q", err, p.Sandbox.Image)
	}

	// A glob's * stays within one path segment of the image name.
	r = parseString(t, PolicyPath, "sandbox: {image: ghcr.io/acme/team/go}\n")
	if _, err = BuildPolicy(server, r); err == nil {
		t.Error("ghcr.io/acme/* must not allow ghcr.io/acme/team/go")
	}

	r = parseString(t, PolicyPath, "limits: {cost_usd: 1.51}\n")
	_, err = BuildPolicy(server, r)
	if got, want := app.ErrorMessage(err), ".github/agent.yml:1: limits.cost_usd: 1.51 is above this server's cap of 1.5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	r = parseString(t, PolicyPath, "sandbox: {disk: 1GiB}\n")
	_, err = BuildPolicy(server, r)
	if got, want := app.ErrorMessage(err), ".github/agent.yml:1: sandbox.disk: 1GiB is above this server's cap of 512MiB"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCheckTimeoutsWithinSandboxTimeout(t *testing.T) {
	r := parseString(t, PolicyPath, `
sandbox: {timeout: 5m}
checks:
  - {name: quick, run: make quick}
  - {name: slow, run: make slow, timeout: 20m}
`)
	_, err := BuildPolicy(openServer(), r)
	if got, want := app.ErrorMessage(err), ".github/agent.yml:5: checks[1].timeout: 20m is longer than sandbox.timeout (5m), which bounds the whole agent phase"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	r = parseString(t, PolicyPath, "sandbox: {timeout: 5m}\nchecks: [{name: quick, run: make quick}]\n")
	p, err := BuildPolicy(openServer(), r)
	if err != nil || p.Checks[0].Timeout != 5*time.Minute {
		t.Errorf("a check without a timeout must get at most sandbox.timeout: %v %v", err, p.Checks)
	}
}

func TestRequireChecks(t *testing.T) {
	p, err := BuildPolicy(openServer())
	if err != nil {
		t.Fatal(err)
	}
	err = p.RequireChecks()
	if app.ErrorCode(err) != app.EPolicy {
		t.Fatalf("RequireChecks without checks: %v", err)
	}
	intro := "agentbot needs to know when a task is done, and this repository defines no checks. " +
		"Add a `checks:` list to `.github/agent.yml` on the default branch (or to the organisation's `.github` repository), " +
		"fastest first; a task is done when all of them pass; `agentbot config init` writes a starter file, " +
		"and `/agent setup` on an issue proposes one in a pull request, proved in the sandbox. "
	goChecks := "```yaml\nchecks:\n  - {name: build, run: \"go build ./...\", timeout: 5m}\n  - {name: test, run: \"go test ./...\", timeout: 15m}\n```"
	pyChecks := "```yaml\nchecks:\n  - {name: test, run: \"python3 -m pytest\", timeout: 15m}\n```"
	nodeChecks := "```yaml\nchecks:\n  - {name: test, run: \"npm test\", timeout: 15m}\n```"
	want := intro + "For example:\n\nfor a Go module:\n\n" + goChecks + "\n\nfor a Python package:\n\n" + pyChecks +
		"\n\nfor a Node package:\n\n" + nodeChecks
	if got := app.ErrorMessage(err); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}

	files := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	for _, tt := range []struct {
		files func(string) bool
		want  string
	}{
		{files("go.mod", "package.json"), intro + "For this Go module (go.mod):\n\n" + goChecks},
		{files("README.md", "requirements.txt"), intro + "For this Python package (requirements.txt):\n\n" + pyChecks},
		{files("pyproject.toml"), intro + "For this Python package (pyproject.toml):\n\n" + pyChecks},
		{files("package.json"), intro + "For this Node package (package.json):\n\n" + nodeChecks},
		{files("Makefile"), want},
	} {
		if got := app.ErrorMessage(p.RequireChecksIn(tt.files)); got != tt.want {
			t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
		}
	}

	// Every snippet in the message must itself be a valid policy with checks.
	for _, snippet := range []string{goChecks, pyChecks, nodeChecks} {
		snippet = strings.TrimSuffix(strings.TrimPrefix(snippet, "```yaml\n"), "```")
		p, err := BuildPolicy(openServer(), parseString(t, "snippet", snippet))
		if err != nil || p.RequireChecks() != nil {
			t.Errorf("the snippet %q does not give a policy with checks: %v", snippet, err)
		}
	}
	withChecks := Policy{Checks: []Check{{Name: "t", Run: "true"}}}
	if err := withChecks.RequireChecksIn(files("go.mod")); err != nil {
		t.Errorf("a policy with checks: %v", err)
	}
}

func TestParsePolicyEdgeCases(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty file", "", ""},
		{"comments only", "# nothing yet\n", ""},
		{"null section", "limits:\n", ""},
		{"unknown top-level key", "x: 5m\n", `.github/agent.yml:1: x: unknown key (expected one of: version, trigger, checks, setup, sandbox, paths, limits, tools, model, pull_request, quality, review)`},
		{"top level list", "- a\n", `.github/agent.yml:1: expected a mapping of keys to values, not a list`},
		{"bool for int", "limits: {iterations: true}\n", `.github/agent.yml:1: limits.iterations: "true" is not a whole number`},
		{"float for int", "limits: {diff_lines: 1.5}\n", `.github/agent.yml:1: limits.diff_lines: "1.5" is not a whole number`},
		{"word for bool", "setup: {network: maybe}\n", `.github/agent.yml:1: setup.network: "maybe" is not true or false`},
		{"negative", "sandbox: {cpus: -1}\n", `.github/agent.yml:1: sandbox.cpus: -1 must be more than zero`},
		{"empty key", "\"\": 1\n", `.github/agent.yml:1: "": unknown key (expected one of: version, trigger, checks, setup, sandbox, paths, limits, tools, model, pull_request, quality, review)`},
		{"shorthand rule", "tools: {write: off}\n", ""},
		{"trailing empty document", "limits: {iterations: 3}\n---\n", ""},
		{"second document", "limits: {iterations: 3}\n---\nlimits: {iterations: 300}\n", `.github/agent.yml:2: a second YAML document (after ---); the file must hold one`},
		{"merge key", "limits:\n  <<: {iterations: 3}\n", `.github/agent.yml:2: limits: merge keys (<<) are not supported; write the keys out`},
		{"alias", "checks:\n  - &c {name: a, run: make}\nlimits: {iterations: *c}\n", `.github/agent.yml:3: limits.iterations: expected a single value, not a mapping`},
		{"mapping for tool rule list", "tools: {write: [auto]}\n", `.github/agent.yml:1: tools.write: expected a mapping of keys to values, not a list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy(PolicyPath, []byte(tt.yaml))
			if got := errorText(err); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return app.ErrorMessage(err)
}

func FuzzParsePolicy(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yml"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("00000000: \n0000:\n&000000: 0")) // an empty key once reached an unexported field
	f.Add([]byte("checks: [{run: x}]\ntools: {shell: {policy: allowlist, allow: ['[']}}\n"))
	server := DefaultServerConfig()
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParsePolicy(PolicyPath, data)
		if err != nil {
			if app.ErrorMessage(err) == "Internal error." {
				t.Fatalf("a broken file must be explained: %v", err)
			}
			return
		}
		if _, err := BuildPolicy(server, r); err != nil && app.ErrorCode(err) != app.EInvalid {
			t.Fatalf("BuildPolicy: %v", err)
		}
	})
}

func TestManyProblemsAreCut(t *testing.T) {
	var b strings.Builder
	for i := range maxReported + 5 {
		fmt.Fprintf(&b, "key%d: x\n", i)
	}
	_, err := ParsePolicy(PolicyPath, []byte(b.String()))
	lines := strings.Split(app.ErrorMessage(err), "\n")
	if len(lines) != maxReported+1 || lines[len(lines)-1] != "… and 5 more problems" {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

// BenchmarkLoadPolicy measures what a worker does per task with a policy
// already fetched: parse the org's and the repo's files, then merge them.
func BenchmarkLoadPolicy(b *testing.B) {
	data, err := os.ReadFile("testdata/valid/design-example.yml")
	if err != nil {
		b.Fatal(err)
	}
	org := []byte("checks: [{name: test, run: make test}]\nlimits: {iterations: 20}\n")
	server := openServer()
	b.ReportAllocs()
	for b.Loop() {
		o, err := ParsePolicy("org", org)
		if err != nil {
			b.Fatal(err)
		}
		r, err := ParsePolicy("repo", data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := BuildPolicy(server, o, r); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReproduceFor(t *testing.T) {
	for _, tt := range []struct {
		written string
		onPull  bool
		want    Reproduce
	}{
		{"", false, ReproducePreferred},
		{"", true, ReproduceOff},
		{"quality: {reproduce: required}\n", false, ReproduceRequired},
		{"quality: {reproduce: required}\n", true, ReproduceRequired},
		{"quality: {reproduce: off}\n", false, ReproduceOff},
	} {
		p, err := BuildPolicy(openServer(), parseString(t, PolicyPath, "version: 1\n"+tt.written))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ReproduceFor(tt.onPull); got != tt.want {
			t.Errorf("%q on a pull request %v: %q; want %q", tt.written, tt.onPull, got, tt.want)
		}
	}
}

// An operator can require reproduction everywhere and keep repositories
// from turning it off.
func TestReproduceLockedByTheServer(t *testing.T) {
	server, err := ParseServerConfig("server.yaml", []byte("policy: {quality: {reproduce: required}}\nlocked: [quality]\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPolicy(server, parseString(t, PolicyPath, "version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ReproduceFor(true); got != ReproduceRequired {
		t.Errorf("the operator's reproduce: %q; want required", got)
	}
	_, err = BuildPolicy(server, parseString(t, PolicyPath, "version: 1\nquality: {reproduce: off}\n"))
	if want := ".github/agent.yml:2: quality.reproduce: is fixed by this server's operator and cannot be set here; remove it"; app.ErrorMessage(err) != want {
		t.Errorf("a repository turning it off: %v; want %q", err, want)
	}
}

func TestPolicyAttempts(t *testing.T) {
	server := openServer()
	server.Max.Limits.Attempts = 3

	// One attempt unless a file asks for more: a task runs as it always did.
	p, err := BuildPolicy(server)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Attempts != 1 || len(p.Model.Attempts) != 0 || p.Model.Temperature != nil || len(p.Model.Temperatures) != 0 {
		t.Errorf("defaults: attempts %d, models %q, temperature %v, temperatures %v; want 1 and none", p.Limits.Attempts, p.Model.Attempts, p.Model.Temperature, p.Model.Temperatures)
	}

	r := parseString(t, PolicyPath, "limits: {attempts: 3}\nmodel: {attempts: [gpt-4.1, o4-mini], temperature: 0, temperatures: [0.7, 2]}\n")
	if p, err = BuildPolicy(server, r); err != nil {
		t.Fatal(err)
	}
	if p.Limits.Attempts != 3 || !slices.Equal(p.Model.Attempts, []string{"gpt-4.1", "o4-mini"}) {
		t.Errorf("attempts %d, models %q; want 3 and [gpt-4.1 o4-mini]", p.Limits.Attempts, p.Model.Attempts)
	}
	// 0 is a temperature, not an absent one: it must be sent.
	if p.Model.Temperature == nil || *p.Model.Temperature != 0 || !slices.Equal(p.Model.Temperatures, []float64{0.7, 2}) {
		t.Errorf("temperature %v, temperatures %v; want 0 and [0.7 2]", p.Model.Temperature, p.Model.Temperatures)
	}
	// A layer above keeps the temperature it does not set.
	top := parseString(t, "org", "model: {temperatures: [1]}\n")
	if p, err = BuildPolicy(server, r, top); err != nil {
		t.Fatal(err)
	}
	if p.Model.Temperature == nil || *p.Model.Temperature != 0 || !slices.Equal(p.Model.Temperatures, []float64{1}) {
		t.Errorf("over a layer: temperature %v, temperatures %v; want 0 and [1]", p.Model.Temperature, p.Model.Temperatures)
	}

	for _, tt := range []struct{ file, want string }{
		{"limits: {attempts: 4}\n", ".github/agent.yml:1: limits.attempts: 4 is above this server's cap of 3"},
		{"limits: {attempts: 0}\n", ".github/agent.yml:1: limits.attempts: 0 must be more than zero"},
		{"model: {attempts: [gpt-4.1, \" \"]}\n", ".github/agent.yml:1: model.attempts[1]: is empty; write a model name"},
		{"model: {temperature: .nan}\n", ".github/agent.yml:1: model.temperature: NaN is not a sampling temperature; write a number from 0 to 2"},
		{"model: {temperatures: [1, 3]}\n", ".github/agent.yml:1: model.temperatures[1]: 3 is not a sampling temperature; write a number from 0 to 2"},
		{"model: {temperature: warm}\n", ".github/agent.yml:1: model.temperature: \"warm\" is not a number"},
		{"limits: {attempts: 2}\ntools: {shell: human}\n", ".github/agent.yml:1: limits.attempts: 2 attempts cannot pause for an approver, and tools.shell.policy is human; set one of them otherwise"},
	} {
		r, err := ParsePolicy(PolicyPath, []byte(tt.file))
		if err == nil {
			_, err = BuildPolicy(server, r)
		}
		if got := app.ErrorMessage(err); got != tt.want {
			t.Errorf("%q: got %q, want %q", tt.file, got, tt.want)
		}
	}

	// The server's cap is written like the value it bounds.
	c, err := ParseServerConfig("server.yaml", []byte("max: {limits: {attempts: 2}}\n"))
	if err != nil || c.Max.Limits.Attempts != 2 {
		t.Errorf("max.limits.attempts: %d, %v; want 2", c.Max.Limits.Attempts, err)
	}
}
