package workspace

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// hardening is passed as -c to every git command. Configuration from files
// is already out of the container's reach (the git dir, HOME and the system
// config are the host's), so these guard against what git reads from the
// work tree or does on its own: hooks, fsmonitor daemons, untracked caches,
// credential helpers and redirects that could carry the token elsewhere.
var hardening = []string{
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.attributesFile=/dev/null",
	"-c", "core.excludesFile=/dev/null",
	"-c", "core.autocrlf=false",
	"-c", "core.symlinks=true",
	"-c", "credential.helper=",
	"-c", "submodule.recurse=false",
	"-c", "http.followRedirects=false",
}

// neutralAttributes goes into every task git dir as info/attributes, which
// takes precedence over any .gitattributes in the work tree. "!attr" makes
// each attribute unspecified, so a .gitattributes written in the sandbox
// cannot select a filter, textconv or diff driver, a merge driver, an
// encoding or an end-of-line conversion: the host reads and writes bytes as
// they are. (core.attributesFile only replaces the global file and does not
// help against in-tree files.)
const neutralAttributes = "* !filter !diff !merge !text !eol !ident !working-tree-encoding\n"

// gitRunner runs host git with a clean, fixed environment and a timeout.
type gitRunner struct {
	home    string
	env     []string
	timeout time.Duration
	log     *slog.Logger
}

func newGitRunner(home string, timeout time.Duration, log *slog.Logger) *gitRunner {
	return &gitRunner{
		home: home,
		env: []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"XDG_CONFIG_HOME=" + home,
			"GIT_CONFIG_NOSYSTEM=1",
			"GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_ATTR_NOSYSTEM=1",
			"GIT_TERMINAL_PROMPT=0",
			// A mirror holds whatever refs the remote has; refs/replace/*
			// must not change what a commit id means on the host.
			"GIT_NO_REPLACE_OBJECTS=1",
			"GIT_ALLOW_PROTOCOL=http:https",
			"GIT_PAGER=cat",
			"LC_ALL=C",
		},
		timeout: timeout,
		log:     log,
	}
}

// gitCall is one git invocation.
type gitCall struct {
	gitDir   string // --git-dir; empty for clone
	workTree string // --work-tree; empty for commands that need none
	token    string // sent as an http.extraHeader through the environment
	env      []string
	stdin    io.Reader
	args     []string
	// maxStdout, when positive, bounds the output kept: past it git is
	// stopped and run fails with errOutputTooLarge.
	maxStdout int
}

// errOutputTooLarge reports output over gitCall.maxStdout.
var errOutputTooLarge = errors.New("output too large")

// capWriter buffers up to max bytes and fails the write that goes past,
// which closes git's pipe and ends it.
type capWriter struct {
	buf      *bytes.Buffer
	max      int
	exceeded bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.max {
		w.exceeded = true
		return 0, errOutputTooLarge
	}
	return w.buf.Write(p)
}

// authEnv returns the environment that makes git send token as the
// installation-token Basic credential GitHub expects. Configuration given
// this way lives only in the environment of the one git process: it is never
// written to a config file, a URL, argv or a log line.
func authEnv(token string) []string {
	cred := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	return []string{
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.extraHeader",
		"GIT_CONFIG_VALUE_0=Authorization: Basic " + cred,
	}
}

// run runs c and returns its standard output. The error carries the tail of
// standard error, which git never fills with the extra header.
func (g *gitRunner) run(ctx context.Context, c gitCall) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()

	argv := make([]string, 0, len(hardening)+len(c.args)+2)
	if c.gitDir != "" {
		argv = append(argv, "--git-dir="+c.gitDir)
	}
	if c.workTree != "" {
		argv = append(argv, "--work-tree="+c.workTree)
	}
	argv = append(argv, hardening...)
	argv = append(argv, c.args...)

	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Env = append(append([]string(nil), g.env...), c.env...)
	if c.token != "" {
		cmd.Env = append(cmd.Env, authEnv(c.token)...)
	}
	// Commands such as apply take paths relative to the working directory,
	// not to --work-tree: they must run at the top of the tree. Others run
	// in HOME, which exists whatever happens to the worker's own directory.
	cmd.Dir = cmp.Or(c.workTree, g.home)
	cmd.Stdin = c.stdin
	var stdout, stderr bytes.Buffer
	out := &capWriter{buf: &stdout, max: c.maxStdout}
	cmd.Stdout = &stdout
	if c.maxStdout > 0 {
		cmd.Stdout = out
	}
	cmd.Stderr = &stderr
	// git starts helpers (remote-http, index-pack, pack-objects): a timeout
	// kills the whole process group, not only git.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err := cmd.Run()
	g.log.Debug("git", "args", c.args, "duration", time.Since(start), "ok", err == nil)
	if err != nil {
		switch {
		case out.exceeded:
			err = fmt.Errorf("%w (%w, over %d bytes)", err, errOutputTooLarge, c.maxStdout)
		case ctx.Err() != nil:
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return stdout.Bytes(), fmt.Errorf("git %s: %w: %s", head(strings.Join(c.args, " "), 120), err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes(), nil
}

// runString runs c and returns its output without the final newline.
func (g *gitRunner) runString(ctx context.Context, c gitCall) (string, error) {
	out, err := g.run(ctx, c)
	return strings.TrimSpace(string(out)), err
}

func head(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
