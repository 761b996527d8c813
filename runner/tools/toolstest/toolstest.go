// Package toolstest runs the tools' commands on the host, for tests that
// need real checks without a container.
package toolstest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// HostRunner runs commands with sh in Dir on the host. It satisfies
// tools.Runner. It is no sandbox: use it only on trees a test wrote.
type HostRunner struct {
	Dir string
	// OnRun, when set, sees every command before it runs.
	OnRun func(sandbox.Cmd)
}

// Run runs cmd under its timeout, killing its process group when it ends.
func (h HostRunner) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	if h.OnRun != nil {
		h.OnRun(cmd)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := cmd.Argv
	if cmd.Shell != "" {
		argv = []string{"sh", "-c", cmd.Shell}
	}
	c := exec.CommandContext(ctx, argv[0], argv[1:]...)
	c.Dir = filepath.Join(h.Dir, cmd.Dir)
	c.Env = append([]string{"HOME=" + os.TempDir(), "PATH=/usr/local/go/bin:/usr/local/bin:/usr/bin:/bin", "GOFLAGS=-mod=mod", "GOCACHE=/tmp/agentbot-toolstest-gocache", "GOPATH=/tmp/agentbot-toolstest-gopath"}, cmd.Env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	c.Stdin = bytes.NewReader(cmd.Stdin)
	start := time.Now()
	err := c.Run()
	res := sandbox.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Duration: time.Since(start)}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		res.ExitCode = ee.ExitCode()
		res.TimedOut = ctx.Err() != nil
		if res.ExitCode < 0 {
			res.ExitCode = 128 + int(syscall.SIGKILL)
		}
		return res, nil
	}
	return res, err
}
