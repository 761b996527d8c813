package sandboxtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// HostImage is the only image a Host starts: its Image, the host itself.
const HostImage = "agentbot-host"

var errExecutorEnded = errors.New("the executor ended")

// hostImageID is what Host.ImageID answers for HostImage.
const hostImageID = "sha256:agentbot-host"

// ErrNotOnHost is wrapped by the error of a Host that is asked for what
// only a container gives: another image, overlays, network, egress, a kept
// home or a CA bundle. A test that needs one of those needs Docker.
var ErrNotOnHost = errors.New("a host sandbox cannot do this; the test needs a container")

// Host starts sandboxes that are processes of the test: each runs the
// real executor, sandbox.Serve, in the test's process, speaking the wire
// protocol over pipes, with the spec's work tree as its root. It is for
// tests of the logic around sandboxes, which then run without Docker and
// without a container's start; it isolates nothing. Its commands run as
// the test's user, with the host's PATH and tools, under no limit but the
// executor's own (Spec.MaxTreeGrowth, the timeout, the output caps):
// CPUs, Memory, Pids, TmpfsSize and MaxFileSize are not enforced. A test
// whose commands act as an attacker would, or that is about isolation,
// limits, images or network, runs in containers (NewDriver).
//
// Every sandbox gets a HOME and a TMPDIR of its own, removed when it
// closes, so that nothing a command writes outside the tree reaches the
// next sandbox through them, as with containers; commands see the same
// variables a container's do (HOME, TMPDIR, LANG, USER, and the image's
// Go settings), with the host's PATH. Go builds share the host's build
// cache, so that a check that builds is warm; a test that needs the same
// "go test" to run again must say -count=1.
type Host struct {
	mu      sync.Mutex
	open    map[*HostSandbox]bool
	started map[string][]string // by TaskID
}

// NewHost returns a Host; the sandboxes still open when the test ends are
// closed then.
func NewHost(t testing.TB) *Host {
	t.Helper()
	h := &Host{open: map[*HostSandbox]bool{}, started: map[string][]string{}}
	t.Cleanup(func() {
		h.mu.Lock()
		left := make([]*HostSandbox, 0, len(h.open))
		for s := range h.open {
			left = append(left, s)
		}
		h.mu.Unlock()
		for _, s := range left {
			if err := s.Close(context.Background()); err != nil {
				t.Errorf("close host sandbox %s: %v", s.Name(), err)
			}
		}
	})
	return h
}

// Image is the image of a Spec that names none.
func (h *Host) Image() string { return HostImage }

// ImageID is a fixed id for HostImage, and an error for any other.
func (h *Host) ImageID(_ context.Context, ref string) (string, error) {
	if ref != "" && ref != HostImage {
		return "", fmt.Errorf("image %s: %w", ref, ErrNotOnHost)
	}
	return hostImageID, nil
}

// StartEgress fails: a host sandbox has no network to put a proxy on.
func (h *Host) StartEgress(context.Context, sandbox.EgressSpec) (sandbox.Egress, error) {
	return nil, fmt.Errorf("egress proxy: %w", ErrNotOnHost)
}

// Open lists the ids of the sandboxes of task (their Spec.TaskID) that are
// started and not yet closed.
func (h *Host) Open(task string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for s := range h.open {
		if s.task == task {
			ids = append(ids, s.id)
		}
	}
	return ids
}

// Started lists the ids of every sandbox of task started so far, in
// order, closed or not.
func (h *Host) Started(task string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.started[task])
}

// Start starts an executor over spec.WorkTree. It fails on a spec that
// asks for what only a container gives (see ErrNotOnHost).
func (h *Host) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Box, error) {
	if err := hostable(spec); err != nil {
		return nil, fmt.Errorf("start host sandbox for task %s: %w", spec.TaskID, err)
	}
	tree, err := filepath.Abs(spec.WorkTree)
	if err != nil {
		return nil, fmt.Errorf("sandbox work tree %q: %w", spec.WorkTree, err)
	}
	if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("sandbox work tree %s is not a directory", tree)
	}
	cache, err := hostGoCache()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentbot-host-sandbox-")
	if err != nil {
		return nil, err
	}
	home, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	env := append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "USER=sandbox",
		// As the sandbox image sets them, with the build cache shared.
		"GOTOOLCHAIN=local", "GOPROXY=off", "GOTELEMETRY=off", "GOPATH=" + filepath.Join(home, "go"), "GOCACHE=" + cache,
	}, spec.Env...)

	s := &HostSandbox{id: hostID(), task: spec.TaskID, h: h, dir: dir, maxTreeGrowth: spec.MaxTreeGrowth, served: make(chan error, 1), done: make(chan struct{})}
	reqR, reqW := io.Pipe()
	ansR, ansW := io.Pipe()
	s.req, s.ans = reqW, json.NewDecoder(ansR)
	s.closeAns = func() { ansR.Close() }
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	go func() {
		err := sandbox.Serve(serveCtx, reqR, ansW, sandbox.ExecOptions{Root: tree, Env: env,
			// The host's cgroup counts kills of processes that are not the
			// sandbox's.
			OOMCounter: func() (int64, bool) { return 0, false }})
		// A Run then fails at once, rather than wait on a pipe no one
		// reads or writes.
		reqR.CloseWithError(errExecutorEnded)
		ansW.CloseWithError(cmp.Or(err, errExecutorEnded))
		s.served <- err
	}()
	h.mu.Lock()
	h.open[s] = true
	h.started[s.task] = append(h.started[s.task], s.id)
	h.mu.Unlock()
	return s, nil
}

// hostable refuses a spec a host sandbox cannot honour.
func hostable(spec sandbox.Spec) error {
	var no []string
	if spec.TaskID == "" {
		return errors.New("sandbox spec: TaskID is required")
	}
	if spec.Image != "" && spec.Image != HostImage {
		no = append(no, "image "+spec.Image)
	}
	if len(spec.Overlays) > 0 {
		no = append(no, "overlays")
	}
	if spec.Egress != nil {
		no = append(no, "an egress proxy")
	}
	if spec.Network {
		no = append(no, "network")
	}
	if spec.Home != "" {
		no = append(no, "a kept home")
	}
	if spec.CABundle != "" {
		no = append(no, "a CA bundle")
	}
	if len(no) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(no, ", "), ErrNotOnHost)
	}
	return nil
}

// hostID is 64 hex digits, as a container's id is.
func hostID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// hostGoCache is the host's Go build cache, which every host sandbox of
// the process shares.
var hostGoCache = sync.OnceValues(func() (string, error) {
	out, err := exec.Command(goTool(), "env", "GOCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOCACHE: %w", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" || dir == "off" {
		return "", errors.New("the host has no Go build cache")
	}
	return dir, nil
})

// HostSandbox is a sandbox a Host started: an executor in the test's
// process.
type HostSandbox struct {
	id, task string
	h        *Host
	dir      string // HOME and TMPDIR

	req      *io.PipeWriter
	ans      *json.Decoder
	closeAns func()
	stop     context.CancelFunc
	served   chan error    // Serve's return
	done     chan struct{} // closed by Close: a waiting Run returns

	mu            sync.Mutex // one command at a time
	broken        error
	maxTreeGrowth int64

	closeOnce sync.Once
	closeErr  error
}

// Name is the sandbox's id: 64 hex digits, unique.
func (s *HostSandbox) Name() string { return s.id }

// Run sends cmd to the executor and waits for its answer, as the Docker
// driver's Container.Run does: a command that fails is a Result, errors
// mean the command was refused (sandbox.ErrInvalidCmd) or the sandbox
// failed. If ctx ends first, the sandbox is unusable.
func (s *HostSandbox) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return sandbox.Result{}, s.broken
	}
	select {
	case <-s.done:
		return sandbox.Result{}, s.closedErr()
	default:
	}
	if cmd.MaxTreeGrowth == 0 {
		cmd.MaxTreeGrowth = s.maxTreeGrowth
	}
	req, err := json.Marshal(cmd)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("encode command: %w", err)
	}
	type answer struct {
		a   sandbox.Answer
		err error
	}
	got := make(chan answer, 1)
	go func() {
		if _, err := s.req.Write(append(req, '\n')); err != nil {
			got <- answer{err: fmt.Errorf("send command: %w", err)}
			return
		}
		var a sandbox.Answer
		err := s.ans.Decode(&a)
		got <- answer{a, err}
	}()
	select {
	case r := <-got:
		if r.err != nil {
			s.broken = fmt.Errorf("host sandbox %s: %w", s.id[:12], r.err)
			return sandbox.Result{}, s.broken
		}
		if err := r.a.Err(); err != nil {
			return sandbox.Result{}, err
		}
		return r.a.Result, nil
	case <-s.done:
		return sandbox.Result{}, s.closedErr()
	case <-ctx.Done():
		// The executor may still answer the abandoned command.
		s.broken = fmt.Errorf("host sandbox %s: command abandoned: %w", s.id[:12], context.Cause(ctx))
		return sandbox.Result{}, fmt.Errorf("host sandbox %s: %w", s.id[:12], ctx.Err())
	}
}

func (s *HostSandbox) closedErr() error {
	return fmt.Errorf("host sandbox %s: closed", s.id[:12])
}

// Close ends the executor, killing the command it runs, if any, and
// removes the sandbox's HOME and TMPDIR.
func (s *HostSandbox) Close(context.Context) error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.stop()
		s.req.Close()
		s.closeAns()
		var errs []error
		// Whatever Serve returns now is of its being stopped: a broken
		// executor has already failed the Run that found it so.
		select {
		case <-s.served:
		case <-time.After(time.Minute):
			errs = append(errs, errors.New("the executor did not end"))
		}
		errs = append(errs, removeAll(s.dir))
		s.closeErr = errors.Join(errs...)
		s.h.mu.Lock()
		delete(s.h.open, s)
		s.h.mu.Unlock()
	})
	return s.closeErr
}

// removeAll removes dir, making read-only directories (such as Go's module
// cache) writable first.
func removeAll(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
