package policy

import (
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/bmatcuk/doublestar/v4"
)

// ServerConfig is the operator's side of policy (agentbot serve --config
// server.yaml): which repositories are served and the bounds no repository
// policy may exceed, as Atlantis' server-side repo config bounds repo
// config. It is read from the operator's disk, never from a repository.
type ServerConfig struct {
	Repos        []string // globs of owner/name served; empty: every installed repository
	Images       []string // globs of the sandbox images a policy may name; empty: any
	DefaultImage string   // the sandbox image of a policy that names none
	SetupNetwork bool     // whether a policy's setup may run with network
	// SetupAllowHosts are the only hosts setup's network reaches, through
	// the worker's egress proxy; every other connection is refused and
	// reported.
	SetupAllowHosts []app.AllowHost
	// SetupRegistries are the package registries setup's commands use,
	// reached without being listed in SetupAllowHosts.
	SetupRegistries []Registry
	// SetupCAFile, when set, is a PEM file of CA certificates setup
	// containers trust besides the public roots, as the worker's
	// --setup-ca-file.
	SetupCAFile string
	// SetupMaxEnvBytes bounds a prepared environment (what setup leaves in
	// $HOME and the directories it makes in the tree): a setup that writes
	// more is stopped, and what it built is not kept.
	SetupMaxEnvBytes int64
	// SetupInternalRanges are networks, besides the address classes
	// IsInternalAddr knows, that no allowed name may lead setup to (a
	// cluster's service range): only an address or CIDR entry of
	// SetupAllowHosts reaches them.
	SetupInternalRanges []netip.Prefix
	Max                 Caps // bounds on a policy's numbers
	// Policy is the operator's policy layer, merged over the built-in
	// defaults and under the organisation's and repository's files; nil
	// when the server config has no policy section.
	Policy *RawPolicy
	// Locked lists the settings ("paths.deny") or whole sections ("paths")
	// that policy files may not set, so that Policy's values hold.
	Locked []string
	// Prices are what the models cost, by model name, so that a task's
	// cost is real and limits.cost_usd can stop it. A model missing here
	// costs nothing.
	Prices map[string]ModelPrice
	// Budgets cap what tasks spend per period, per installation,
	// repository or requester (budget.go).
	Budgets []Budget
	Source  string // the file read, or "" for the defaults

	defaultImageSet bool // the file names sandbox.default_image
}

// ModelPrice is what a model costs in USD per million tokens. Cached
// prompt tokens cost CachedPrompt, or Prompt when the provider gives no
// discount (CachedPrompt zero).
type ModelPrice struct {
	Prompt       float64
	CachedPrompt float64
	Completion   float64
}

// Caps bound a policy's numbers; a zero field is no cap. A policy value
// above its cap is an error that names the cap.
type Caps struct {
	Limits  Limits
	Sandbox SandboxSpec // Image unused: images are bounded by ServerConfig.Images
}

// DefaultSetupMaxEnvBytes is setup.max_env_bytes when the server config
// sets none.
const DefaultSetupMaxEnvBytes = 4 << 30

// DefaultServerConfig is the configuration of a server started without
// --config: every repository, only agentbot's own sandbox image, no network
// during setup, and no caps on numbers.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Images:           []string{"agentbot-sandbox:*"},
		DefaultImage:     "agentbot-sandbox:dev",
		SetupMaxEnvBytes: DefaultSetupMaxEnvBytes,
	}
}

// rawServerConfig is server.yaml as written; see deploy/server.example.yaml.
type rawServerConfig struct {
	Repos   []string `yaml:"repos"`
	Sandbox struct {
		Images       []string `yaml:"images"`
		DefaultImage *string  `yaml:"default_image"`
	} `yaml:"sandbox"`
	Setup struct {
		AllowNetwork *bool         `yaml:"allow_network"`
		AllowHosts   []string      `yaml:"allow_hosts"`
		Registries   rawRegistries `yaml:"registries"`
		CAFile       *string       `yaml:"ca_file"`
		MaxEnvBytes  *RawSize      `yaml:"max_env_bytes"`
		// InternalRanges are CIDRs no allowed name may lead to.
		InternalRanges []string `yaml:"internal_ranges"`
	} `yaml:"setup"`
	Max struct {
		Limits  RawLimits `yaml:"limits"`
		Sandbox struct {
			CPUs    *float64     `yaml:"cpus"`
			Memory  *RawSize     `yaml:"memory"`
			Pids    *int64       `yaml:"pids"`
			Timeout *RawDuration `yaml:"timeout"`
			Disk    *RawSize     `yaml:"disk"`
		} `yaml:"sandbox"`
	} `yaml:"max"`
	Policy  RawPolicy       `yaml:"policy"`
	Locked  []string        `yaml:"locked"`
	Models  []rawModelPrice `yaml:"models"`
	Budgets []rawBudget     `yaml:"budgets"`
}

// rawModelPrice is one entry of models:, a list rather than a mapping so
// that model names, which hold dots (gpt-4.1), stay plain values.
type rawModelPrice struct {
	Name         string   `yaml:"name"`
	Prompt       *float64 `yaml:"prompt"`
	CachedPrompt *float64 `yaml:"cached_prompt"`
	Completion   *float64 `yaml:"completion"`
}

// LoadServerConfig reads the server config at path over the defaults, or
// returns the defaults when path is "".
func LoadServerConfig(path string) (ServerConfig, error) {
	if path == "" {
		return DefaultServerConfig(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return ServerConfig{}, fmt.Errorf("read server config: %w", err)
	}
	return ParseServerConfig(path, data)
}

// ParseServerConfig decodes a server config as strictly as a policy file:
// every unknown key, wrong type or bad value is reported with its line.
func ParseServerConfig(name string, data []byte) (ServerConfig, error) {
	var raw rawServerConfig
	lines, errs := decodeFile(name, data, &raw)
	c := DefaultServerConfig()
	c.Source = name
	fail := func(path, format string, args ...any) {
		// A key left out has no line: its nearest parent's is used.
		line := lines[path]
		for p := path; line == 0 && strings.Contains(p, "."); line = lines[p] {
			p = p[:strings.LastIndex(p, ".")]
		}
		errs = append(errs, fieldError{file: name, line: line, path: path, msg: fmt.Sprintf(format, args...)})
	}
	globs := func(path string, list []string) {
		for i, g := range list {
			if problem := checkGlob(g); problem != "" {
				fail(fmt.Sprintf("%s[%d]", path, i), "%s", problem)
			}
		}
	}
	if raw.Repos != nil {
		globs("repos", raw.Repos)
		c.Repos = raw.Repos
	}
	if raw.Sandbox.Images != nil {
		globs("sandbox.images", raw.Sandbox.Images)
		c.Images = raw.Sandbox.Images
	}
	if raw.Sandbox.DefaultImage != nil {
		c.DefaultImage = *raw.Sandbox.DefaultImage
		c.defaultImageSet = true
	}
	if !imageAllowed(c.Images, c.DefaultImage) {
		// Point at default_image, or at images when the default is ours.
		path := "sandbox.default_image"
		errs = append(errs, fieldError{file: name, line: cmp.Or(lines[path], lines["sandbox.images"]), path: path,
			msg: fmt.Sprintf("%q is not among sandbox.images (%s)", c.DefaultImage, strings.Join(c.Images, ", "))})
	}
	if raw.Setup.AllowNetwork != nil {
		c.SetupNetwork = *raw.Setup.AllowNetwork
	}
	for i, h := range raw.Setup.AllowHosts {
		a, err := app.ParseAllowHost(h)
		if err != nil {
			fail(fmt.Sprintf("setup.allow_hosts[%d]", i), "%v", err)
			continue
		}
		c.SetupAllowHosts = append(c.SetupAllowHosts, a)
	}
	c.SetupRegistries = parseRegistries(raw.Setup.Registries, filepath.Dir(name), fail)
	if f := raw.Setup.CAFile; f != nil {
		c.SetupCAFile = *f
		if !filepath.IsAbs(c.SetupCAFile) {
			c.SetupCAFile = filepath.Join(filepath.Dir(name), c.SetupCAFile)
		}
		if err := CheckCAFile(c.SetupCAFile); err != nil {
			fail("setup.ca_file", "%v", err)
		}
	}
	if v := raw.Setup.MaxEnvBytes; v != nil {
		n, problem := parsePolicySize(*v)
		if problem == "" && n <= 0 {
			problem = fmt.Sprintf("%s must be more than zero", *v)
		}
		if problem != "" {
			fail("setup.max_env_bytes", "%s", problem)
		}
		c.SetupMaxEnvBytes = n
	}
	for i, r := range raw.Setup.InternalRanges {
		n, err := netip.ParsePrefix(r)
		if err != nil {
			fail(fmt.Sprintf("setup.internal_ranges[%d]", i), "%q is not a network in CIDR form, such as 10.96.0.0/12", r)
			continue
		}
		c.SetupInternalRanges = append(c.SetupInternalRanges, n.Masked())
	}
	var problems []fieldError
	c.Max, problems = parseCaps(name, &raw, lines)
	errs = append(errs, problems...)
	if _, ok := lines["policy"]; ok {
		// The operator's policy is checked against the operator's own caps.
		c.Policy = &raw.Policy
		_, problems = applySubLayer(&c, name, "policy.", c.Policy, lines)
		errs = append(errs, problems...)
	}
	errs = append(errs, c.parseLocked(raw.Locked, lines)...)
	c.Prices, problems = parsePrices(name, raw.Models, lines)
	errs = append(errs, problems...)
	c.Budgets, problems = parseBudgets(name, raw.Budgets, lines)
	errs = append(errs, problems...)
	slices.SortStableFunc(errs, func(x, y fieldError) int { return cmp.Compare(x.line, y.line) })
	if err := fieldErrors(errs); err != nil {
		return ServerConfig{}, err
	}
	// What only a merged policy can tell (an allowlist without entries, a
	// check longer than the sandbox) would otherwise fail every repository.
	if _, err := BuildPolicy(c); err != nil {
		return ServerConfig{}, err
	}
	return c, nil
}

// parseCaps reads max: by the policy's own settings table, since caps are
// written like the values they bound (max.limits.iterations bounds
// limits.iterations), so they are parsed and checked the same way.
func parseCaps(name string, raw *rawServerConfig, lines map[string]int) (Caps, []fieldError) {
	layer := &RawPolicy{Limits: raw.Max.Limits, Sandbox: RawSandbox{
		CPUs: raw.Max.Sandbox.CPUs, Memory: raw.Max.Sandbox.Memory, Pids: raw.Max.Sandbox.Pids, Timeout: raw.Max.Sandbox.Timeout,
		Disk: raw.Max.Sandbox.Disk,
	}}
	p, errs := applySubLayer(nil, name, "max.", layer, lines)
	return Caps{Limits: p.Limits, Sandbox: p.Sandbox}, errs
}

// applySubLayer applies a policy layer written under prefix in the server
// config by itself, checked against server (nil: unbounded), and returns
// the result and its problems, placed at the server config's lines.
func applySubLayer(server *ServerConfig, name, prefix string, layer *RawPolicy, lines map[string]int) (Policy, []fieldError) {
	layer.file, layer.lines = name, map[string]int{}
	for path, line := range lines {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			layer.lines[rest] = line
		}
	}
	b := newPolicyBuilder(server)
	b.apply(layer, serverLayer)
	for i := range b.errs {
		b.errs[i].path = prefix + b.errs[i].path
	}
	return b.p, b.errs
}

// parseLocked keeps the locked settings, each a setting's path or a
// section of them.
func (c *ServerConfig) parseLocked(locked []string, lines map[string]int) []fieldError {
	var known []string
	var errs []fieldError
	for _, s := range policySettings() {
		section, _, _ := strings.Cut(s.path, ".")
		if !slices.Contains(known, section) {
			known = append(known, section)
		}
		if section != s.path {
			known = append(known, s.path)
		}
	}
	for i, l := range locked {
		if !slices.Contains(known, l) {
			path := fmt.Sprintf("locked[%d]", i)
			errs = append(errs, fieldError{file: c.Source, line: lines[path], path: path,
				msg: fmt.Sprintf("%q is not a policy setting%s", l, suggestKey(l, known))})
		}
	}
	c.Locked = locked
	return errs
}

// parsePrices reads models:. A listed model must price both prompt and
// completion tokens: one left out would count as free and let a task spend
// past its limits.cost_usd.
func parsePrices(name string, models []rawModelPrice, lines map[string]int) (map[string]ModelPrice, []fieldError) {
	if len(models) == 0 {
		return nil, nil
	}
	var errs []fieldError
	prices := make(map[string]ModelPrice, len(models))
	first := map[string]int{}
	for i, m := range models {
		it := listItem{file: name, item: fmt.Sprintf("models[%d]", i), lines: lines, errs: &errs}
		fail := it.fail
		switch line, dup := first[m.Name]; {
		case m.Name == "":
			fail("name", "is missing: the model's name, as the policy's model: names it")
		case dup:
			fail("name", "%q is priced twice (first on line %d)", m.Name, line)
		default:
			first[m.Name] = it.line("name")
		}
		price := func(key string, v *float64, required bool) float64 {
			switch {
			case v == nil && required:
				fail(key, "is missing: the price in USD per million tokens (0 if they are free)")
			case v == nil:
			case *v < 0:
				fail(key, "%v is negative; prices are in USD per million tokens", *v)
			default:
				return *v
			}
			return 0
		}
		p := ModelPrice{
			Prompt:       price("prompt", m.Prompt, true),
			CachedPrompt: price("cached_prompt", m.CachedPrompt, false),
			Completion:   price("completion", m.Completion, true),
		}
		if it.ok() {
			prices[m.Name] = p
		}
	}
	return prices, errs
}

// locks reports whether policy files may not set the setting at path.
func (c *ServerConfig) locks(path string) bool {
	return slices.ContainsFunc(c.Locked, func(l string) bool { return path == l || strings.HasPrefix(path, l+".") })
}

// AllowsRepo returns nil when the server serves repo (owner/name), or an
// *Error saying it does not.
func (c ServerConfig) AllowsRepo(repo string) error {
	if len(c.Repos) == 0 {
		return nil
	}
	for _, g := range c.Repos {
		if doublestar.MatchUnvalidated(g, repo) {
			return nil
		}
	}
	return app.Errorf(app.EPolicy, "agentbot is not enabled for %s on this server; its operator lists the repositories it serves", repo)
}

func imageAllowed(globs []string, image string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if doublestar.MatchUnvalidated(g, image) {
			return true
		}
	}
	return false
}

// WithTriggerLabel returns c with label as the trigger label of its policy
// layer unless that layer names one, so that label is every repository's
// default while a repository's own trigger.label still wins. source names
// where the label came from (a flag), as messages and Policy.Source name a
// file. An empty label changes nothing. c itself is left as it was.
func (c ServerConfig) WithTriggerLabel(label, source string) ServerConfig {
	switch {
	case label == "":
	case c.Policy == nil:
		c.Policy = &RawPolicy{Trigger: RawTrigger{Label: &label}, file: source}
	case c.Policy.Trigger.Label == nil:
		p := *c.Policy
		p.Trigger.Label = &label
		c.Policy = &p
	}
	return c
}

// WithDefaultImage returns c with image as the sandbox image of policies
// that name none, unless the server config file names one itself
// (sandbox.default_image): the worker's --sandbox-image.
func (c ServerConfig) WithDefaultImage(image string) ServerConfig {
	if image != "" && !c.defaultImageSet {
		c.DefaultImage = image
	}
	return c
}

// listItem gathers the problems of one entry of a list in a config file,
// each at its key's line; a key left out has no line of its own, so the
// entry's is used.
type listItem struct {
	file, item string
	lines      map[string]int
	errs       *[]fieldError
	failed     bool
}

func (l *listItem) fail(key, format string, args ...any) {
	*l.errs = append(*l.errs, fieldError{file: l.file, line: l.line(key), path: l.item + "." + key, msg: fmt.Sprintf(format, args...)})
	l.failed = true
}

// line is key's line in the entry, or the entry's.
func (l *listItem) line(key string) int { return cmp.Or(l.lines[l.item+"."+key], l.lines[l.item]) }

// ok reports whether the entry had no problem.
func (l *listItem) ok() bool { return !l.failed }
