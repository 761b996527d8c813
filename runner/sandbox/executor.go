package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Defaults for a Cmd that leaves them zero.
const (
	DefaultTimeout     = 10 * time.Minute
	DefaultOutputLimit = 256 << 10 // bytes kept per stream: half head, half tail
)

// maxRequest bounds one request line (its Stdin included), so that a
// malformed stream cannot make the executor buffer without end.
const maxRequest = 64 << 20

// ErrInvalidCmd is wrapped by errors about a request the executor refused to
// run: no argv, both argv and a shell line, a directory outside the work tree.
var ErrInvalidCmd = errors.New("invalid command")

// Answer is the executor's reply on the wire, one JSON line per Cmd: a
// Result, or why the request was not run at all.
type Answer struct {
	Result
	Error   string `json:"error,omitempty"`
	Invalid bool   `json:"invalid,omitempty"` // Error wraps ErrInvalidCmd
}

// Err returns why the command was not run, or nil when a carries its Result.
// A refused request wraps ErrInvalidCmd.
func (a Answer) Err() error {
	switch {
	case a.Invalid:
		return fmt.Errorf("sandbox: %s: %w", strings.TrimPrefix(a.Error, ErrInvalidCmd.Error()+": "), ErrInvalidCmd)
	case a.Error != "":
		return fmt.Errorf("sandbox executor: %s", a.Error)
	}
	return nil
}

// ExecOptions configure Serve.
type ExecOptions struct {
	// Root is the work tree; a Cmd's Dir is resolved inside it.
	Root string
	// Count are directories whose bytes count with the work tree's
	// against Cmd.MaxTreeGrowth: the upper directories of the overlays
	// (mounted for the executor alone to measure), a setup's $HOME.
	// Skip are the paths, relative to Root, of the overlays mounted in
	// the tree, which Count measures instead.
	Count, Skip []string
	// Env is every command's base environment; a Cmd's Env is appended.
	Env []string
	// OOMCounter returns how many processes the kernel has killed for memory
	// in this container so far; Serve compares it with its count from before
	// a failed command to tell an out-of-memory kill from any other SIGKILL
	// (the container's own OOMKilled state only says something once the
	// whole container is dead). Nil means CgroupOOMKills.
	OOMCounter func() (int64, bool)
	// Contain is for the executor of a sandbox container, and only there:
	// it must run as the container's root, with no capability but those
	// to change its uid, to signal other users' processes and to read any
	// directory (to measure the work tree), as the
	// direct child of the container's init. Commands then run as the
	// sandbox user (UID, GID), so that none of their processes can open
	// the executor's descriptors or memory, or signal it: the answers on
	// its stdout are its own. The executor also makes itself
	// non-dumpable, and after every command it kills every process of
	// the container but the init and itself, and waits until they are
	// gone, so nothing a command started outlives it. Serve refuses to
	// start when the conditions do not hold.
	Contain bool
}

// RegisterFlags registers on fs the options the driver passes on the
// executor's command line besides --contain: --count and --skip,
// repeatable, into o.
func (o *ExecOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("count", "a directory whose bytes count with the work tree's against a command's disk limit (repeatable)", func(v string) error {
		o.Count = append(o.Count, v)
		return nil
	})
	fs.Func("skip", "a path in the work tree, an overlay measured by its --count directory instead (repeatable)", func(v string) error {
		o.Skip = append(o.Skip, v)
		return nil
	})
}

// Serve is the executor that runs inside the container as "agentbot
// sandbox-exec": it reads one JSON Cmd per line from r, runs it, and writes
// one JSON answer per line to w, one command at a time. It returns nil when r
// ends, or the context's error once ctx is done (the running command, if any,
// is killed with its process group).
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts ExecOptions) error {
	if opts.OOMCounter == nil {
		opts.OOMCounter = CgroupOOMKills
	}
	var jail *containment
	if opts.Contain {
		var err error
		if jail, err = contain(); err != nil {
			return fmt.Errorf("contain the executor: %w", err)
		}
	}
	// One /dev/null for every command without stdin, rather than an open
	// per command (a path lookup through the storage driver's root).
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer devNull.Close()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxRequest)
		for sc.Scan() {
			select {
			case lines <- bytes.Clone(sc.Bytes()):
			case <-ctx.Done():
				return
			}
		}
		readErr <- sc.Err()
	}()
	// The tree as the host handed it over: what commands may grow it from.
	space := newSpace(opts)
	var base int64
	if opts.Root != "" {
		base = space.usage()
	}
	enc := json.NewEncoder(w)
	oom := oomWatch{count: opts.OOMCounter}
	oom.reset()
	for {
		var line []byte
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			if err != nil {
				return fmt.Errorf("read request: %w", err)
			}
			return nil
		case line = <-lines:
		}
		var a Answer
		var cmd Cmd
		err := json.Unmarshal(line, &cmd)
		if err != nil {
			err = fmt.Errorf("%w: decode request: %v", ErrInvalidCmd, err)
		} else {
			a.Result, err = runCmd(ctx, cmd, space, opts.Env, devNull, jail, base)
		}
		if jail != nil {
			// Whatever the command was, nothing it started answers for
			// it or lives on into the next one.
			if err := jail.sweep(ctx); err != nil {
				return err
			}
		}
		ran := err == nil
		if err != nil {
			a.Error, a.Invalid = err.Error(), errors.Is(err, ErrInvalidCmd)
		} else if a.ExitCode != 0 {
			// Commands run one at a time, so a kill counted since the
			// last one hit one of this command's processes, whether the
			// command itself or a child (a shell reports its child's
			// SIGKILL as exit status 137). A command that succeeded needs
			// no explaining: its answer waits for no counter.
			a.OOMKilled = oom.moved()
		}
		if err := enc.Encode(&a); err != nil {
			return fmt.Errorf("write answer: %w", err)
		}
		if ran {
			// While the host reads the answer, not before it.
			oom.reset()
		}
	}
}

// oomWatch tells whether the container's out-of-memory kill count moved
// since reset.
type oomWatch struct {
	count func() (int64, bool)
	base  int64
	known bool
}

func (o *oomWatch) reset() { o.base, o.known = o.count() }

func (o *oomWatch) moved() bool {
	if !o.known {
		return false
	}
	n, ok := o.count()
	return ok && n > o.base
}

// runCmd runs one command in its own process group under its timeout, in
// the directory c.Dir of the work tree root, with the base environment env;
// its stdin is devNull unless c.Stdin is set. With a jail, it runs as the
// sandbox user and its timeout kills every process of the container. The
// command is killed the same way once the space (the tree under its root,
// and what it counts with it), which held base bytes when the executor
// started, grows past c.MaxTreeGrowth (see treeLimit).
func runCmd(ctx context.Context, c Cmd, space space, env []string, devNull *os.File, jail *containment, base int64) (Result, error) {
	root := space.root
	argv, err := c.argv()
	if err != nil {
		return Result{}, err
	}
	dir, err := confine(root, c.Dir)
	if err != nil {
		return Result{}, err
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := c.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	growth := c.MaxTreeGrowth
	if growth <= 0 {
		growth = DefaultMaxTreeGrowth
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Cancelled with errTreeFull when the tree outgrows its limit; the
	// timeout stays runCtx's own, so the two are told apart.
	cmdCtx, stopCmd := context.WithCancelCause(runCtx)
	defer stopCmd(nil)
	var treeSize, treeMax int64 // set by the watch before it cancels cmdCtx

	stdout, stderr := NewCapture(limit), NewCapture(limit)
	cmd := exec.CommandContext(cmdCtx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), env...), c.Env...)
	cmd.Stdin = devNull // an *os.File: passed as it is, with no copying goroutine
	if len(c.Stdin) > 0 {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The whole group dies at the timeout, not just the shell at its head.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if jail != nil {
		cmd.SysProcAttr.Credential = jail.user
		// Daemons that left the group too.
		cmd.Cancel = jail.killAll
	}
	// A background child that keeps the output pipes open must not hold the
	// answer back once the command itself has exited.
	cmd.WaitDelay = time.Second

	start := time.Now()
	stopWatch := watchTree(cmdCtx, space, func(start int64) int64 { return treeLimit(base, start, growth) },
		func(size, limit int64) {
			treeSize, treeMax = size, limit
			stopCmd(errTreeFull)
		})
	runErr := cmd.Run()
	res := Result{Duration: time.Since(start)}
	if cmd.Process != nil {
		// Nothing a command started outlives it into the next one.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	stopWatch()
	res.TimedOut = errors.Is(runCtx.Err(), context.DeadlineExceeded)
	if res.TreeFull = errors.Is(context.Cause(cmdCtx), errTreeFull); res.TreeFull {
		what := "the work tree"
		if len(space.count) > 0 {
			what = "the work tree and $HOME"
		}
		fmt.Fprintf(stderr, "\nsandbox: command killed: %s grew to %s, past its limit of %s; delete files it does not need before running more\n",
			what, mib(treeSize), mib(treeMax))
	}
	switch {
	case cmd.ProcessState != nil:
		ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
		res.ExitCode = ws.ExitStatus()
		if ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
		}
	case runErr != nil:
		// The program could not be started: answer as a shell would.
		res.ExitCode = 127
		fmt.Fprintf(stderr, "%s: %v\n", argv[0], runErr)
	}
	res.Stdout, res.StdoutDropped = stdout.Bytes()
	res.Stderr, res.StderrDropped = stderr.Bytes()
	return res, nil
}

func (c Cmd) argv() ([]string, error) {
	switch {
	case len(c.Argv) > 0 && c.Shell != "":
		return nil, fmt.Errorf("%w: both argv and shell are set", ErrInvalidCmd)
	case c.Shell != "":
		return []string{"/bin/sh", "-c", c.Shell}, nil
	case len(c.Argv) > 0 && c.Argv[0] != "":
		return c.Argv, nil
	}
	return nil, fmt.Errorf("%w: no argv and no shell line", ErrInvalidCmd)
}

// confine resolves dir, relative to root, to a directory that is still inside
// root once symlinks are followed.
func confine(root, dir string) (string, error) {
	if root == "" {
		return "", fmt.Errorf("executor has no work tree")
	}
	if dir == "" {
		return root, nil
	}
	if !filepath.IsLocal(dir) {
		return "", fmt.Errorf("%w: dir %q is not inside the work tree", ErrInvalidCmd, dir)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("resolve work tree: %w", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, dir))
	if err != nil {
		return "", fmt.Errorf("%w: dir %q: %v", ErrInvalidCmd, dir, err)
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", fmt.Errorf("%w: dir %q leads out of the work tree", ErrInvalidCmd, dir)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: dir %q is not a directory", ErrInvalidCmd, dir)
	}
	return real, nil
}

// CgroupOOMKills reads the container's count of out-of-memory kills: the
// oom_kill line of memory.events on cgroup v2, or of memory.oom_control on
// cgroup v1 (kernels since 4.13). ok is false when neither can be read.
func CgroupOOMKills() (n int64, ok bool) {
	for _, f := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		if n, ok := oomKillLine(f); ok {
			return n, true
		}
	}
	return 0, false
}

func oomKillLine(file string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// mib formats a byte count for the model to read.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
