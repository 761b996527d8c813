package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox"
)

func TestSandboxExec(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, c := range []sandbox.Cmd{
		{Shell: "pwd; echo err >&2; exit 4"},
		{Argv: []string{"ls"}, Dir: "../outside"},
	} {
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
	}
	var out, stderr bytes.Buffer
	env := Env{Getenv: func(string) string { return "" }, Stdin: &in, Stdout: &out, Stderr: &stderr}
	if err := run(context.Background(), []string{"sandbox-exec", "--root", root}, env); err != nil {
		t.Fatalf("sandbox-exec: %v (stderr %q)", err, stderr.String())
	}
	dec := json.NewDecoder(&out)
	var first sandbox.Result
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	if first.ExitCode != 4 || string(first.Stdout) != root+"\n" || string(first.Stderr) != "err\n" {
		t.Errorf("first answer: exit %d stdout %q stderr %q", first.ExitCode, first.Stdout, first.Stderr)
	}
	var second struct{ Error string }
	if err := dec.Decode(&second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.Error, "not inside the work tree") {
		t.Errorf("a dir outside the tree was answered %q", second.Error)
	}
}

func TestSandboxExecRefusesBadFlag(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	env := Env{Getenv: func(string) string { return "" }, Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &stderr}
	if err := run(context.Background(), []string{"sandbox-exec", "--no-such-flag"}, env); err == nil {
		t.Error("an unknown flag was accepted")
	}
}
