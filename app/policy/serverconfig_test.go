package policy

import (
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

func TestServerConfigExample(t *testing.T) {
	c, err := LoadServerConfig("../../deploy/server.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := ServerConfig{
		Repos:               []string{"acme/*", "acme-labs/tools"},
		Images:              []string{"agentbot-sandbox:*", "golang:1.2*"},
		DefaultImage:        "agentbot-sandbox:dev",
		SetupNetwork:        true,
		SetupAllowHosts:     []app.AllowHost{{Host: "10.0.0.5", Port: 8081}},
		SetupMaxEnvBytes:    8 << 30,
		SetupInternalRanges: []netip.Prefix{netip.MustParsePrefix("34.118.224.0/20")},
		Max: Caps{
			Limits:  Limits{Iterations: 50, DiffLines: 2000, FilesChanged: 100, Tokens: 5000000, CostUSD: 20, WallClock: 2 * time.Hour, ContextTokens: 50000, Attempts: 3},
			Sandbox: SandboxSpec{CPUs: 4, Memory: 8 << 30, Pids: 1024, Timeout: 90 * time.Minute, Disk: 4 << 30},
		},
		Locked: []string{"paths.deny", "trigger.allow_forks"},
		Prices: map[string]ModelPrice{
			"gpt-4.1":      {Prompt: 2, CachedPrompt: 0.5, Completion: 8},
			"gpt-4.1-mini": {Prompt: 0.4, CachedPrompt: 0.1, Completion: 1.6},
		},
		Budgets: []Budget{
			{Name: "organisation", Per: PerInstallation, USD: 500},
			{Name: "infra", Per: PerRepository, Only: []string{"acme/infra-*"}, Window: 7 * 24 * time.Hour, Tokens: 20000000},
			{Name: "per requester, monthly", Per: PerRequester, USD: 40},
		},
		Source:          "../../deploy/server.example.yaml",
		defaultImageSet: true,
	}
	if c.Policy == nil {
		t.Fatal("the example's policy section was not read")
	}
	var env []string
	for _, r := range c.SetupRegistries {
		env = append(env, r.Env()...)
	}
	if want := []string{"GOPROXY=https://proxy.golang.org", "GOSUMDB=sum.golang.org", "npm_config_registry=https://registry.npmjs.org/",
		"PIP_INDEX_URL=https://pypi.org/simple/"}; !reflect.DeepEqual(env, want) {
		t.Errorf("the example's registries set %q, want %q", env, want)
	}
	want.SetupRegistries = c.SetupRegistries
	layer := c.Policy
	c.Policy = nil
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
	c.Policy = layer

	// The design's example policy is within the example's bounds once it
	// stops setting what the example locks.
	r := readPolicy(t, "testdata/valid/design-example.yml")
	r.Paths.Deny = nil
	delete(r.lines, "paths.deny")
	p, err := BuildPolicy(c, r)
	if err != nil {
		t.Fatalf("design example against server.example.yaml: %v", err)
	}
	if !slices.Contains(p.Paths.Deny, "deploy/secrets/**") {
		t.Errorf("paths.deny %q: the operator's policy layer was not applied", p.Paths.Deny)
	}
}

func TestServerPolicyAndLocks(t *testing.T) {
	server, err := ParseServerConfig("server.yaml", []byte(`
policy:
  paths: {deny: ["secrets/**"]}
  limits: {iterations: 10, tokens: 1000}
locked: [paths, trigger.allow_forks]
`))
	if err != nil {
		t.Fatal(err)
	}
	org := parseString(t, "acme/.github:.github/agent.yml", "checks: [{name: test, run: make test}]\nlimits: {iterations: 20}\n")
	p, err := BuildPolicy(server, org)
	if err != nil {
		t.Fatal(err)
	}
	if p.Limits.Iterations != 20 || p.Limits.Tokens != 1000 || !reflect.DeepEqual(p.Paths.Deny, []string{"secrets/**"}) {
		t.Errorf("built-in < server policy < organisation not honoured: %+v %+v", p.Limits, p.Paths)
	}
	if want := "server.yaml < acme/.github:.github/agent.yml"; p.Source != want {
		t.Errorf("Source %q, want %q", p.Source, want)
	}

	repo := parseString(t, "acme/app:.github/agent.yml", "paths:\n  allow: [\"**\"]\n  deny: []\ntrigger: {allow_forks: true, users: [octocat]}\n")
	_, err = BuildPolicy(server, org, repo)
	want := "acme/app:.github/agent.yml:2: paths.allow: is fixed by this server's operator and cannot be set here; remove it\n" +
		"acme/app:.github/agent.yml:3: paths.deny: is fixed by this server's operator and cannot be set here; remove it\n" +
		"acme/app:.github/agent.yml:4: trigger.allow_forks: is fixed by this server's operator and cannot be set here; remove it"
	if got := errorText(err); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestLoadServerConfigDefaults(t *testing.T) {
	c, err := LoadServerConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c, DefaultServerConfig()) {
		t.Errorf("no file: %+v", c)
	}
	if _, err := LoadServerConfig("testdata/no-such-file.yml"); err == nil {
		t.Error("a missing file must be an error, not the defaults")
	}
	// A file that sets only caps keeps the other defaults.
	c, err = ParseServerConfig("server.yaml", []byte("max: {limits: {iterations: 5}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Max.Limits.Iterations != 5 || c.DefaultImage != "agentbot-sandbox:dev" || c.SetupNetwork {
		t.Errorf("partial file: %+v", c)
	}
}

func TestParseServerConfigErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key", "repo: [a/b]\n", `server.yaml:1: repo: unknown key (did you mean "repos"?)`},
		{"bad glob", "repos: [\"acme/[\"]\n", `server.yaml:1: repos[0]: "acme/[" is not a valid glob (see https://github.com/bmatcuk/doublestar#patterns)`},
		{"default image outside images", "sandbox:\n  images: [golang:*]\n", `server.yaml:2: sandbox.default_image: "agentbot-sandbox:dev" is not among sandbox.images (golang:*)`},
		{"bad cap", "max:\n  limits:\n    wall_clock: soon\n  sandbox: {memory: lots}\n",
			"server.yaml:3: max.limits.wall_clock: \"soon\" is not a duration such as 90s, 15m or 1h30m\n" +
				`server.yaml:4: max.sandbox.memory: "lots" is not a size such as 512MiB or 4GiB`},
		{"image under max", "max: {sandbox: {image: x}}\n", `server.yaml:1: max.sandbox.image: unknown key (expected one of: cpus, memory, pids, timeout, disk)`},
		{"wrong type", "setup: {allow_network: sometimes}\n", `server.yaml:1: setup.allow_network: "sometimes" is not true or false`},
		{"bad environment cap", "setup:\n  max_env_bytes: huge\n", `server.yaml:2: setup.max_env_bytes: "huge" is not a size such as 512MiB or 4GiB`},
		{"no environment cap", "setup:\n  max_env_bytes: 0\n", `server.yaml:2: setup.max_env_bytes: 0 must be more than zero`},
		{"bad allow_hosts", "setup:\n  allow_hosts:\n    - https://pypi.org/simple\n    - 169.254.169.254\n    - \"pypi.org:http\"\n",
			"server.yaml:3: setup.allow_hosts[0]: \"https://pypi.org/simple\" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)\n" +
				"server.yaml:4: setup.allow_hosts[1]: \"169.254.169.254\" is a link-local (cloud metadata) address, which setup may never reach\n" +
				`server.yaml:5: setup.allow_hosts[2]: "pypi.org:http": port "http" is not a number from 1 to 65535`},
		{"bad internal_ranges", "setup:\n  internal_ranges: [10.96.0.0/12, 10.96.0.1]\n",
			`server.yaml:2: setup.internal_ranges[1]: "10.96.0.1" is not a network in CIDR form, such as 10.96.0.0/12`},
		{"unknown lock", "locked: [paths, path.deny]\n", `server.yaml:1: locked[1]: "path.deny" is not a policy setting (did you mean "paths.deny"?)`},
		{"policy above its own caps", "max: {limits: {iterations: 5}}\npolicy:\n  limits: {iterations: 10}\n",
			`server.yaml:3: policy.limits.iterations: 10 is above this server's cap of 5`},
		{"policy with an unknown key", "policy:\n  limit: {iterations: 10}\n", `server.yaml:2: policy.limit: unknown key (did you mean "limits"?)`},
		{"policy that no repository could use", "policy:\n  tools: {shell: allowlist}\n", `server.yaml:2: tools.shell.policy: allowlist needs at least one entry in tools.shell.allow`},
		{"unknown price key", "models:\n  - name: m\n    prompt: 1\n    output: 2\n",
			"server.yaml:4: models[0].output: unknown key (expected one of: name, prompt, cached_prompt, completion)"},
		{"price missing", "models:\n  - {name: m, prompt: 1}\n",
			"server.yaml:2: models[0].completion: is missing: the price in USD per million tokens (0 if they are free)"},
		{"model unnamed", "models:\n  - {prompt: 1, completion: 2}\n",
			"server.yaml:2: models[0].name: is missing: the model's name, as the policy's model: names it"},
		{"model priced twice", "models:\n  - {name: m, prompt: 1, completion: 2}\n  - name: m\n    prompt: 1\n    completion: 3\n",
			`server.yaml:3: models[1].name: "m" is priced twice (first on line 2)`},
		{"negative price", "models:\n  - {name: m, prompt: 1, completion: -2}\n",
			"server.yaml:2: models[0].completion: -2 is negative; prices are in USD per million tokens"},
		{"prices as a mapping", "models: {m: {prompt: 1}}\n", "server.yaml:1: models: expected a list, not a mapping"},
		{"policy with a forbidden image", "policy: {sandbox: {image: ubuntu}}\n", `server.yaml:1: policy.sandbox.image: "ubuntu" is not an image this server allows (agentbot-sandbox:*)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseServerConfig("server.yaml", []byte(tt.yaml))
			if got := errorText(err); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestAllowsRepo(t *testing.T) {
	c := ServerConfig{Repos: []string{"acme/*", "other/one"}}
	for repo, allowed := range map[string]bool{"acme/app": true, "other/one": true, "other/two": false, "acmeish/app": false} {
		if err := c.AllowsRepo(repo); (err == nil) != allowed {
			t.Errorf("AllowsRepo(%s) = %v, want allowed %v", repo, err, allowed)
		}
	}
	err := c.AllowsRepo("other/two")
	if want := "agentbot is not enabled for other/two on this server; its operator lists the repositories it serves"; app.ErrorMessage(err) != want || app.ErrorCode(err) != app.EPolicy {
		t.Errorf("got %v", err)
	}
	if err := (ServerConfig{}).AllowsRepo("any/repo"); err != nil {
		t.Errorf("no repos listed must serve every repository: %v", err)
	}
}

func FuzzParseServerConfig(f *testing.F) {
	for _, file := range []string{"../../deploy/server.example.yaml", "testdata/server.yml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("locked: [\"\"]\npolicy: {checks: [{run: x}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseServerConfig("server.yaml", data)
		if err != nil {
			if app.ErrorCode(err) != app.EInvalid {
				t.Fatalf("a broken server config must be explained: %v", err)
			}
			return
		}
		if _, err := BuildPolicy(c); err != nil {
			t.Fatalf("a server config that loads must give a policy: %v", err)
		}
	})
}

func TestWithTriggerLabel(t *testing.T) {
	label := func(t *testing.T, c ServerConfig, layers ...*RawPolicy) Policy {
		t.Helper()
		p, err := BuildPolicy(c, layers...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("no policy layer", func(t *testing.T) {
		c := DefaultServerConfig().WithTriggerLabel("ops:fix", "--trigger-label")
		p := label(t, c)
		if p.Trigger.Label != "ops:fix" {
			t.Errorf("label = %q, want ops:fix", p.Trigger.Label)
		}
		if !strings.Contains(p.Source, "--trigger-label") {
			t.Errorf("source %q does not name the flag", p.Source)
		}
		own, err := ParsePolicy("own.yml", []byte("trigger: {label: \"repo:fix\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := label(t, c, own).Trigger.Label; got != "repo:fix" {
			t.Errorf("with the repository's own label: %q, want repo:fix", got)
		}
	})
	t.Run("layer without a label", func(t *testing.T) {
		orig, err := ParseServerConfig("server.yaml", []byte("policy: {limits: {iterations: 7}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		c := orig.WithTriggerLabel("ops:fix", "--trigger-label")
		p := label(t, c)
		if p.Trigger.Label != "ops:fix" || p.Limits.Iterations != 7 {
			t.Errorf("label %q, iterations %d; want ops:fix and the layer's 7", p.Trigger.Label, p.Limits.Iterations)
		}
		if orig.Policy.Trigger.Label != nil {
			t.Error("the original config's layer was changed")
		}
	})
	t.Run("the layer's own label holds", func(t *testing.T) {
		orig, err := ParseServerConfig("server.yaml", []byte("policy: {trigger: {label: \"server:fix\"}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := label(t, orig.WithTriggerLabel("ops:fix", "--trigger-label")).Trigger.Label; got != "server:fix" {
			t.Errorf("label = %q, want the server config's server:fix", got)
		}
	})
	t.Run("no label", func(t *testing.T) {
		if c := DefaultServerConfig().WithTriggerLabel("", "--trigger-label"); c.Policy != nil {
			t.Errorf("an empty label added a layer: %+v", c.Policy)
		}
	})
}
