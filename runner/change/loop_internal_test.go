package change

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func TestBootingRunsOnceStarted(t *testing.T) {
	t.Parallel()
	b := boot(t.Context(), sandboxtest.NewHost(t), sandbox.Spec{TaskID: "boot", WorkTree: t.TempDir()},
		func() { t.Error("the start failed") })
	res, err := b.Run(t.Context(), sandbox.Cmd{Shell: "echo up"})
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "up" {
		t.Fatalf("run: %+v, %v", res, err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.box.Run(t.Context(), sandbox.Cmd{Argv: []string{"true"}}); err == nil {
		t.Error("the sandbox still runs commands after Close")
	}
}

// A sandbox that cannot start ends the loop: the command waiting for it
// gets the start's error, never a result the model would be shown.
func TestBootingFailureEndsTheLoop(t *testing.T) {
	t.Parallel()
	loop, end := context.WithCancel(t.Context())
	defer end()
	missing := filepath.Join(t.TempDir(), "no-such-tree")
	b := boot(t.Context(), sandboxtest.NewHost(t), sandbox.Spec{TaskID: "boot-fail", WorkTree: missing}, end)
	_, err := b.Run(loop, sandbox.Cmd{Argv: []string{"true"}})
	if err == nil {
		t.Fatal("a command ran in a sandbox that could not start")
	}
	if loop.Err() == nil {
		t.Error("the failed start did not end the loop")
	}
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "start the sandbox") {
		t.Errorf("start error %v; want the start's error", err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Errorf("close after a failed start: %v", err)
	}
}
