package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// checkOutputLimit caps the output of one check the model sees, head and
// tail: a failing test's summary is at the end, its first error at the start.
const checkOutputLimit = 12 << 10

type noArgs struct{}

func (noArgs) validate() error { return nil }

func runChecks(ctx context.Context, s *Set, _ noArgs) Result {
	runs, err := s.checks(ctx)
	if err != nil {
		return failed("checks", "%v", err)
	}
	last := runs[len(runs)-1]
	if !last.Passed {
		return Result{Outcome: Failed, Target: "checks", Checks: runs, Output: describeFailure(runs)}
	}
	return Result{Outcome: OK, Target: "checks", Checks: runs, Output: describePass(runs)}
}

type finishArgs struct {
	Summary string `json:"summary"`
	Title   string `json:"title"`
}

// MaxTitle bounds, in characters, the pull request title finish may give:
// what GitHub shows in a list without cutting it.
const MaxTitle = 72

func (a finishArgs) validate() error {
	if strings.TrimSpace(a.Summary) == "" {
		return errors.New("summary is required: say what changed and why")
	}
	t := strings.TrimSpace(a.Title)
	if strings.ContainsAny(t, "\r\n") {
		return errors.New("title must be one line")
	}
	if n := utf8.RuneCountInString(t); n > MaxTitle {
		return fmt.Errorf("title is %d characters long; give one of at most %d", n, MaxTitle)
	}
	return nil
}

// finish is accepted only on green checks, so "done" always means the
// repository's definition of done holds on the tree being handed over.
func finish(ctx context.Context, s *Set, a finishArgs) Result {
	runs, err := s.checks(ctx)
	if err != nil {
		return failed("finish", "%v", err)
	}
	if last := runs[len(runs)-1]; !last.Passed {
		return Result{Outcome: Failed, Target: "finish", Checks: runs,
			Output: "finish refused: the checks do not pass yet.\n" + describeFailure(runs)}
	}
	return Result{Outcome: OK, Target: "finish", Checks: runs, Done: true, Summary: a.Summary,
		Title: strings.TrimSpace(a.Title), Output: "accepted: " + describePass(runs)}
}

// checks runs the policy's checks in order, stopping at the first failure.
func (s *Set) checks(ctx context.Context) ([]CheckRun, error) {
	if len(s.policy.Checks) == 0 {
		return nil, errors.New("the repository's policy defines no checks")
	}
	var runs []CheckRun
	for _, c := range s.policy.Checks {
		res, err := s.runner.Run(ctx, sandbox.Cmd{Shell: c.Run, Timeout: c.Timeout})
		if err != nil {
			return nil, fmt.Errorf("run check %s: %w", c.Name, err)
		}
		out := combined(res)
		run := CheckRun{Name: c.Name, Run: c.Run, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
			Passed: res.ExitCode == 0 && !res.TimedOut, Output: capText(out, checkOutputLimit),
			Millis: res.Duration.Milliseconds()}
		if !run.Passed {
			run.Signature = failureSignature(c.Name, res.ExitCode, out)
		}
		runs = append(runs, run)
		if !run.Passed {
			break
		}
	}
	return runs, nil
}

func describePass(runs []CheckRun) string {
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	return fmt.Sprintf("all checks pass (%s)", strings.Join(names, ", "))
}

func describeFailure(runs []CheckRun) string {
	f := runs[len(runs)-1]
	status := fmt.Sprintf("exit status %d", f.ExitCode)
	if f.TimedOut {
		status = "timed out"
	}
	return fmt.Sprintf("check %q (%s) failed: %s\n%s", f.Name, f.Run, status, f.Output)
}

// combined is a command's output as the model reads it: stderr, where
// compilers and test runners put the error, then stdout, each with the cut
// said where the sandbox dropped bytes.
func combined(r sandbox.Result) string {
	var sb strings.Builder
	part := func(b []byte, dropped int64, name string) {
		if len(b) == 0 {
			return
		}
		sb.Write(b)
		if dropped > 0 {
			fmt.Fprintf(&sb, "\n[%d bytes of %s dropped by the sandbox]", dropped, name)
		}
		if !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
	}
	part(r.Stderr, r.StderrDropped, "stderr")
	part(r.Stdout, r.StdoutDropped, "stdout")
	return sb.String()
}

// volatile matches the parts of a failure that change between runs of the
// same failure: durations, addresses, goroutine numbers, temp paths.
var volatile = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m)\b|0x[0-9a-fA-F]+|goroutine \d+|/tmp/[^\s:]+`)

// failureSignature identifies a failure independently of run-to-run noise,
// so that the loop can tell "the same failure again" from a new one.
func failureSignature(check string, code int, out string) string {
	h := sha256.Sum256([]byte(volatile.ReplaceAllString(out, "#")))
	return fmt.Sprintf("%s:%d:%s", check, code, hex.EncodeToString(h[:8]))
}

type runCommandArgs struct {
	Command string `json:"command"`
}

func (a runCommandArgs) validate() error {
	if strings.TrimSpace(a.Command) == "" {
		return errors.New("command is required")
	}
	return nil
}

// shellMeta are the characters that chain or redirect commands: a glob in
// the allowlist such as "go test *" must not admit "go test x; curl …".
const shellMeta = ";&|`$<>\n(){}"

func runCommand(ctx context.Context, s *Set, a runCommandArgs) Result {
	cmd := strings.TrimSpace(a.Command)
	if reason := s.commandRefused(cmd); reason != "" {
		return Result{Outcome: BlockedCommand, Target: cmd, Output: "refused, not run: " + reason}
	}
	res, err := s.runner.Run(ctx, sandbox.Cmd{Shell: cmd, Timeout: 10 * time.Minute})
	if err != nil {
		return failed(cmd, "run %q: %v", cmd, err)
	}
	status := fmt.Sprintf("exit status %d", res.ExitCode)
	if res.TimedOut {
		status = "timed out"
	}
	// A command may write files (gofmt -w, go mod tidy): Changed makes the
	// loop take the tree's diff again.
	out := Result{Outcome: OK, Target: cmd, Changed: true, Output: status + "\n" + capText(combined(res), checkOutputLimit)}
	if res.ExitCode != 0 || res.TimedOut {
		out.Outcome = Failed
	}
	return out
}

// commandRefused returns why the shell policy refuses cmd, or "".
func (s *Set) commandRefused(cmd string) string {
	rule := s.policy.Tools.Shell
	switch rule.Policy {
	case policy.ApprovalAuto, policy.ApprovalHuman:
		return ""
	case policy.ApprovalAllowlist, "": // no rule allows nothing
		for _, g := range rule.Allow {
			if cmd == g {
				return ""
			}
		}
		if !strings.ContainsAny(cmd, shellMeta) && matchAny(rule.Allow, cmd) {
			return ""
		}
		return fmt.Sprintf("%q is not allowed by the repository's shell policy; allowed: %q. Use run_checks for the checks.", cmd, rule.Allow)
	}
	return "the repository's policy turns shell commands off"
}

// capText keeps the head and the tail of s within limit bytes and says how
// much was cut between them.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	head := limit * 2 / 5
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := limit - head
	for tail > 0 && !utf8.RuneStart(s[len(s)-tail]) {
		tail--
	}
	return fmt.Sprintf("%s\n[... %d bytes cut ...]\n%s", s[:head], len(s)-head-tail, s[len(s)-tail:])
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
