package app

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

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
	Max          Caps     // bounds on a policy's numbers
	Source       string   // the file read, or "" for the defaults
}

// Caps bound a policy's numbers; a zero field is no cap. A policy value
// above its cap is an error that names the cap.
type Caps struct {
	Limits  Limits
	Sandbox SandboxSpec // Image unused: images are bounded by ServerConfig.Images
}

// DefaultServerConfig is the configuration of a server started without
// --config: every repository, only agentbot's own sandbox image, no network
// during setup, and no caps on numbers.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		Images:       []string{"agentbot-sandbox:*"},
		DefaultImage: "agentbot-sandbox:dev",
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
		AllowNetwork *bool `yaml:"allow_network"`
	} `yaml:"setup"`
	Max struct {
		Limits  RawLimits `yaml:"limits"`
		Sandbox struct {
			CPUs    *float64     `yaml:"cpus"`
			Memory  *RawSize     `yaml:"memory"`
			Pids    *int64       `yaml:"pids"`
			Timeout *RawDuration `yaml:"timeout"`
		} `yaml:"sandbox"`
	} `yaml:"max"`
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
		errs = append(errs, fieldError{file: name, line: lines[path], path: path, msg: fmt.Sprintf(format, args...)})
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
	c.Max, errs = parseCaps(name, &raw, lines, errs)
	slices.SortStableFunc(errs, func(x, y fieldError) int { return cmp.Compare(x.line, y.line) })
	if err := fieldErrors(errs); err != nil {
		return ServerConfig{}, err
	}
	return c, nil
}

// parseCaps reads max: by the policy's own settings table, since caps are
// written like the values they bound (max.limits.iterations bounds
// limits.iterations), so they are parsed and checked the same way.
func parseCaps(name string, raw *rawServerConfig, lines map[string]int, errs []fieldError) (Caps, []fieldError) {
	const prefix = "max."
	layer := &RawPolicy{file: name, lines: map[string]int{}, Limits: raw.Max.Limits, Sandbox: RawSandbox{
		CPUs: raw.Max.Sandbox.CPUs, Memory: raw.Max.Sandbox.Memory, Pids: raw.Max.Sandbox.Pids, Timeout: raw.Max.Sandbox.Timeout,
	}}
	for path, line := range lines {
		if rest, ok := strings.CutPrefix(path, prefix); ok {
			layer.lines[rest] = line
		}
	}
	b := newPolicyBuilder(nil)
	b.apply(layer, false)
	for _, e := range b.errs {
		e.path = prefix + e.path
		errs = append(errs, e)
	}
	return Caps{Limits: b.p.Limits, Sandbox: b.p.Sandbox}, errs
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
	return Errorf(EPolicy, "agentbot is not enabled for %s on this server; its operator lists the repositories it serves", repo)
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
