package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbot/agentbot/app"
)

// starterChecks are the checks "config init" proposes for a repository
// whose build it recognises by a file at its root, fastest first.
var starterChecks = []struct {
	marker string
	checks []string
}{
	{"go.mod", []string{"go build ./...", "go test ./..."}},
	{"Cargo.toml", []string{"cargo build", "cargo test"}},
	{"package.json", []string{"npm test"}},
	{"pyproject.toml", []string{"python -m pytest"}},
	{"Makefile", []string{"make test"}},
}

// configInit writes a starter .github/agent.yml: the checks that define
// done (given with --check, or guessed from the repository's build files),
// and the rest commented out at the defaults, so that an admin sees what
// may be set. It never overwrites a file, and validates what it wrote.
func configInit(args []string, env Env) error {
	fs := newFlagSet("config init", env)
	setSynopsis(fs, "agentbot config init [--repo DIR] [--check CMD]...")
	repo := fs.String("repo", ".", "the repository's checkout; the file is written to DIR/"+app.PolicyPath)
	var checks checkFlags
	fs.Var(&checks, "check", "a check that defines done, fastest first; repeatable (default: guessed from go.mod, Cargo.toml, package.json, pyproject.toml or Makefile)")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	runs := []string(checks)
	if len(runs) == 0 {
		for _, s := range starterChecks {
			if _, err := os.Stat(filepath.Join(*repo, s.marker)); err == nil {
				runs = s.checks
				break
			}
		}
	}
	if len(runs) == 0 {
		return usageErrorf(fs, "no build file found in %s to guess the checks from: give them with --check", *repo)
	}
	path := filepath.Join(*repo, app.PolicyPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("config init: %s exists; edit it, or check it with agentbot config validate %s", path, path)
	}
	if err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	_, err = f.WriteString(starterPolicy(runs))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	if _, err := validatePolicyFile(path, app.ServerConfig{SetupNetwork: true}); err != nil {
		return fmt.Errorf("config init wrote %s, which does not validate: %w", path, err)
	}
	fmt.Fprintf(env.Stdout, "wrote %s; commit it on the default branch, where agentbot reads it\n", path)
	return nil
}

// starterPolicy is the text of a starter policy with these checks.
func starterPolicy(runs []string) string {
	var b strings.Builder
	b.WriteString(`# agentbot's policy for this repository; every key is listed by
# "agentbot config schema". Read from the default branch only.
version: 1
checks:                 # the definition of done, fastest first
`)
	for _, run := range runs {
		fmt.Fprintf(&b, "  - run: %s\n", strconv.Quote(run))
	}
	b.WriteString(`# trigger: {command: /agent, label: "agent:fix", roles: [admin, maintain, write]}
# setup: {network: true, run: []}        # before the agent, e.g. fetch dependencies
# sandbox: {cpus: 2, memory: 4GiB, pids: 512, timeout: 45m}
# paths: {deny: [".github/workflows/**", "**/*.pem", "**/.env*"]}
# limits: {iterations: 30, diff_lines: 600, files_changed: 25}
# pull_request: {draft: false, labels: [agent]}
`)
	return b.String()
}
