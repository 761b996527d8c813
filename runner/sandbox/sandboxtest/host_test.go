package sandboxtest_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func TestHostSandboxRunsCommandsInItsTree(t *testing.T) {
	t.Parallel()
	h := sandboxtest.NewHost(t)
	tree := t.TempDir()
	if err := os.Mkdir(filepath.Join(tree, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := h.Start(t.Context(), sandbox.Spec{TaskID: "h1", WorkTree: tree, Env: []string{"GREETING=hi"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(t.Context(), sandbox.Cmd{Shell: `echo "$GREETING" > said; pwd; echo err >&2; exit 3`, Dir: "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || strings.TrimSpace(string(res.Stdout)) != filepath.Join(tree, "sub") || string(res.Stderr) != "err\n" {
		t.Errorf("result %+v; want exit 3 in sub, with its stderr", res)
	}
	if b, _ := os.ReadFile(filepath.Join(tree, "sub", "said")); string(b) != "hi\n" {
		t.Errorf("the command wrote %q in the tree; want the spec's variable", b)
	}
	if _, err := s.Run(t.Context(), sandbox.Cmd{Argv: []string{"true"}, Dir: "../.."}); !errors.Is(err, sandbox.ErrInvalidCmd) {
		t.Errorf("a dir outside the tree: %v; want the executor's refusal", err)
	}
	if res, err := s.Run(t.Context(), sandbox.Cmd{Argv: []string{"true"}}); err != nil || res.ExitCode != 0 {
		t.Errorf("after a refusal: %+v, %v; want the sandbox still usable", res, err)
	}
}

func TestHostSandboxesHaveTheirOwnHomeAndTmp(t *testing.T) {
	t.Parallel()
	h := sandboxtest.NewHost(t)
	tree := t.TempDir()
	dirs := func(s sandbox.Box) (home, tmp, cache string) {
		t.Helper()
		res, err := s.Run(t.Context(), sandbox.Cmd{Shell: `touch "$HOME/mark" "$TMPDIR/mark"; echo "$HOME"; echo "$TMPDIR"; echo "$GOCACHE"`})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %+v, %v", res, err)
		}
		f := strings.Fields(string(res.Stdout))
		if len(f) != 3 {
			t.Fatalf("stdout %q; want HOME, TMPDIR and GOCACHE", res.Stdout)
		}
		return f[0], f[1], f[2]
	}
	a, err := h.Start(t.Context(), sandbox.Spec{TaskID: "h2", WorkTree: tree})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Start(t.Context(), sandbox.Spec{TaskID: "h2", WorkTree: tree})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() == b.Name() || len(a.Name()) != 64 {
		t.Errorf("names %q and %q; want two ids of 64 hex digits", a.Name(), b.Name())
	}
	if open := h.Open("h2"); len(open) != 2 || !slices.Contains(open, a.Name()) {
		t.Errorf("open sandboxes of h2: %v; want both", open)
	}
	homeA, tmpA, cacheA := dirs(a)
	homeB, tmpB, cacheB := dirs(b)
	if homeA == homeB || tmpA == tmpB || strings.HasPrefix(homeA, tree) || strings.HasPrefix(tmpA, tree) {
		t.Errorf("HOME %s and %s, TMPDIR %s and %s; want each sandbox's own, outside the tree", homeA, homeB, tmpA, tmpB)
	}
	if cacheA != cacheB {
		t.Errorf("GOCACHE %s and %s; want the build cache shared", cacheA, cacheB)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{homeA, tmpA} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after Close: %v; want it removed", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(homeB, "mark")); err != nil {
		t.Errorf("the other sandbox's home went with the first: %v", err)
	}
	if open := h.Open("h2"); !slices.Equal(open, []string{b.Name()}) {
		t.Errorf("open sandboxes of h2 after one closed: %v; want %s", open, b.Name())
	}
	if started := h.Started("h2"); !slices.Equal(started, []string{a.Name(), b.Name()}) {
		t.Errorf("started sandboxes of h2: %v; want both in order", started)
	}
	if _, err := a.Run(t.Context(), sandbox.Cmd{Argv: []string{"true"}}); err == nil {
		t.Error("a closed sandbox ran a command")
	}
}

// A spec that asks for what only a container gives fails to start, so that
// a test that needs it cannot pass on the host.
func TestHostRefusesWhatNeedsAContainer(t *testing.T) {
	t.Parallel()
	h := sandboxtest.NewHost(t)
	tree := t.TempDir()
	for name, spec := range map[string]sandbox.Spec{
		"image":     {Image: "agentbot-sandbox:env-go"},
		"overlays":  {Overlays: []sandbox.Overlay{{Target: "/home/sandbox", Lower: tree, Upper: tree, Work: tree}}},
		"egress":    {Egress: &docker.Egress{}},
		"network":   {Network: true},
		"home":      {Home: tree},
		"ca bundle": {CABundle: filepath.Join(tree, "ca.pem")},
	} {
		spec.TaskID, spec.WorkTree = "h3", tree
		if s, err := h.Start(t.Context(), spec); !errors.Is(err, sandboxtest.ErrNotOnHost) {
			t.Errorf("%s: Start = %v, %v; want ErrNotOnHost", name, s, err)
		}
	}
	if _, err := h.Start(t.Context(), sandbox.Spec{TaskID: "h3", WorkTree: tree, Image: h.Image()}); err != nil {
		t.Errorf("the host's own image: %v", err)
	}
	if _, err := h.ImageID(t.Context(), "agentbot-sandbox:dev"); !errors.Is(err, sandboxtest.ErrNotOnHost) {
		t.Errorf("ImageID of another image: %v; want ErrNotOnHost", err)
	}
	if _, err := h.StartEgress(t.Context(), sandbox.EgressSpec{TaskID: "h3"}); !errors.Is(err, sandboxtest.ErrNotOnHost) {
		t.Errorf("StartEgress: %v; want ErrNotOnHost", err)
	}
}

// Close ends a command that is still running, and the Run waiting for it.
func TestHostSandboxCloseEndsTheRunningCommand(t *testing.T) {
	t.Parallel()
	h := sandboxtest.NewHost(t)
	tree := t.TempDir()
	s, err := h.Start(t.Context(), sandbox.Spec{TaskID: "h4", WorkTree: tree})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(t.Context(), sandbox.Cmd{Shell: "echo $$ > started.tmp && mv started.tmp started && exec sleep 600"})
		done <- err
	}()
	var pid int
	for {
		if b, err := os.ReadFile(filepath.Join(tree, "started")); err == nil {
			if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("the Run of a closed sandbox's command returned no error")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the command's process %d after Close: %v; want it gone", pid, err)
	}
}
