package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
)

// configInit writes .github/agent.yml as the repository's tree shows it
// (app/policyinit): the toolchains, the setup that fetches their
// dependencies, the image that has them, and the checks the project runs
// itself, or those given with --check. It never overwrites a file, and
// checks the policy against the server config before writing it; --verify
// then runs the setup and each check once in the sandbox, as a task would.
func configInit(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("config init", env)
	setSynopsis(fs, "agentbot config init [--repo DIR] [--check CMD]... [--image IMAGE] [--stdout] [--verify [--setup-network --allow-host H]...]")
	repo := fs.String("repo", ".", "the repository's checkout; the file is written to DIR/"+policy.PolicyPath)
	var checks checkFlags
	fs.Var(&checks, "check", "a check that defines done, fastest first; repeatable (default: the project's own, from its CI workflows, tox.ini, noxfile.py, package.json or Makefile)")
	image := fs.String("image", "", "the sandbox.image to write (default: the toolchain's, as deploy/sandbox/build-offline.sh tags it)")
	stdout := fs.Bool("stdout", false, "print the policy instead of writing it (the verification, with --verify, goes to stderr)")
	var vf verifyFlags
	vf.register(fs)
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	p, err := policyinit.Infer(os.DirFS(*repo))
	switch {
	case len(checks) > 0:
		p = p.WithChecks(checks)
	case err != nil:
		return usageErrorf(fs, "%s in %s: give them with --check", err, *repo)
	}
	if *image != "" {
		p = p.WithImage(*image)
	}
	text := p.YAML()
	path := filepath.Join(*repo, policy.PolicyPath)
	// Checked before anything is written, against --config's server
	// config when given: its sandbox.images may not hold the image. Setup's
	// network is the operator's to allow, and the policy asks for it.
	server, err := policy.LoadServerConfig(vf.setup.config)
	if err != nil {
		return fmt.Errorf("config init: --config: %s", app.ErrorMessage(err))
	}
	server.SetupNetwork = true
	if _, err := validatePolicy(path, []byte(text), server); err != nil {
		return fmt.Errorf("config init made a policy for %s that does not validate, and wrote nothing: %w", *repo, err)
	}
	report := env.Stdout
	if *stdout {
		if _, err := io.WriteString(env.Stdout, text); err != nil {
			return err
		}
		report = env.Stderr
	} else if err := writePolicy(path, text); err != nil {
		return err
	}
	if !*stdout {
		fmt.Fprintf(report, "wrote %s for %s; commit it on the default branch, where agentbot reads it\n", path, detected(p))
	}
	if !vf.verify {
		return nil
	}
	return verifyPolicy(ctx, *repo, text, vf, env.Getenv, report)
}

// writePolicy creates the file at path with text, and refuses when it exists.
func writePolicy(path, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("config init: %s exists and is never overwritten; edit it, check it with agentbot config validate %s, or see what config init infers with --stdout", path, path)
	}
	if err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("config init: %w", err)
	}
	return nil
}

// detected names the toolchains of p, or says that none was.
func detected(p policyinit.Proposal) string {
	var names []string
	for _, t := range p.Toolchains {
		if t.Name != "" {
			names = append(names, fmt.Sprintf("%s (%s)", t.Name, strings.Join(t.Evidence, ", ")))
		}
	}
	return cmp.Or(strings.Join(names, ", "), "the given checks")
}

// lineOf is the 1-based line of the policy text that first holds s, or 0.
func lineOf(text, s string) int {
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	return 0
}
