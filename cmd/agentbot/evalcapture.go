package main

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"

	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/runner/eval"
)

// prRefRE is OWNER/REPO#NUMBER.
var prRefRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([0-9]+)$`)

// cmdEvalCapture writes a merged pull request as a task of a suite, read
// through the App's installation on its repository with a read-only
// token.
func cmdEvalCapture(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("eval capture", env)
	out := fs.String("out", "", "the suite directory the task is written into (required)")
	name := fs.String("name", "", "the task's directory name; default <repo>-<number>")
	var checks, hidden checkFlags
	fs.Var(&checks, "check", "a check command, repeatable; default the snapshot's .github/agent.yml")
	fs.Var(&hidden, "hidden", "a command run over the hidden tests, repeatable; default the checks")
	af := addAppFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: agentbot eval capture OWNER/REPO#PR --out SUITE_DIR [--name N] [--check CMD]... [--hidden CMD]...")
		fs.PrintDefaults()
	}
	ref, err := parseWithArg(fs, args, env)
	if err != nil {
		return err
	}
	m := prRefRE.FindStringSubmatch(ref)
	if m == nil {
		return usageErrorf(fs, "%q: want OWNER/REPO#NUMBER", ref)
	}
	number, err := strconv.Atoi(m[2])
	if err != nil || number <= 0 {
		return usageErrorf(fs, "%q: want a pull request number of 1 or more", ref)
	}
	if *out == "" {
		return usageErrorf(fs, "--out SUITE_DIR is required")
	}
	id, err := af.identity()
	if err != nil {
		return err
	}
	id.Config.Logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	gh, err := github.NewApp(id.Config)
	if err != nil {
		return err
	}
	repo := m[1]
	inst, err := gh.RepoInstallation(ctx, repo)
	if err != nil {
		return fmt.Errorf("eval capture: %w", err)
	}
	reader, err := gh.Reader(inst, repo)
	if err != nil {
		return fmt.Errorf("eval capture: %w", err)
	}
	c, err := eval.Capture(ctx, reader, eval.CaptureOptions{Repo: repo, PR: number, Suite: *out, Name: *name, Checks: checks, Hidden: hidden})
	if err != nil {
		return fmt.Errorf("eval capture %s: %w", ref, err)
	}
	issue := "the pull request's own text"
	if c.Issue != 0 {
		issue = fmt.Sprintf("%s#%d", repo, c.Issue)
	}
	w := env.Stdout
	fmt.Fprintf(w, "wrote %s\n", printable(c.Dir))
	fmt.Fprintf(w, "  snapshot: %s (the tree %s was merged onto as %s)\n", c.Base, printable(ref), c.Merge)
	fmt.Fprintf(w, "  issue: %s\n", printable(issue))
	for _, p := range c.HiddenTests {
		fmt.Fprintf(w, "  hidden test: %s\n", printable(p))
	}
	for _, p := range c.Changed {
		fmt.Fprintf(w, "  replayed by trajectory.yaml: %s\n", printable(p))
	}
	for _, p := range c.Skipped {
		fmt.Fprintf(w, "  left out (symbolic link or submodule): %s\n", printable(p))
	}
	return nil
}
