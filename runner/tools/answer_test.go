package tools_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/tools"
)

func TestReadOnlySetOffersNoWrite(t *testing.T) {
	dir := tree(t, map[string]string{"main.go": "package main\n"})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s, err := tools.New(tools.Config{Root: root, Policy: testPolicy(), ReadOnly: true})
	if err != nil {
		t.Fatalf("a read-only set needs no runner: %v", err)
	}
	var names []string
	for _, d := range s.Defs() {
		names = append(names, d.Name)
	}
	if want := []string{"list_files", "read_file", "search", "find_symbol", "answer"}; !slices.Equal(names, want) {
		t.Errorf("tools offered %v; want %v", names, want)
	}
	ctx := context.Background()
	for _, call := range [][2]string{
		{"edit_file", `{"path":"main.go","old_string":"main","new_string":"x"}`},
		{"write_file", `{"path":"new.go","content":"x"}`},
		{"apply_patch", `{"patch":""}`},
		{"run_command", `{"command":"true"}`},
		{"run_checks", `{}`},
		{"finish", `{"summary":"done"}`},
	} {
		if r := s.Call(ctx, call[0], call[1]); r.Outcome != tools.Invalid || !strings.Contains(r.Output, "unknown tool") {
			t.Errorf("%s on a read-only set: %s %q; want an unknown tool", call[0], r.Outcome, r.Output)
		}
	}
	if got := read(t, dir, "main.go"); got != "package main\n" {
		t.Errorf("main.go changed: %q", got)
	}
	if r := s.Call(ctx, "read_file", `{"path":"main.go"}`); r.Outcome != tools.OK {
		t.Errorf("read_file: %s %q", r.Outcome, r.Output)
	}
	if r := s.Call(ctx, "answer", `{"answer":"  "}`); r.Outcome != tools.Invalid || r.Done {
		t.Errorf("empty answer: %s done=%v", r.Outcome, r.Done)
	}
	r := s.Call(ctx, "answer", `{"answer":"It is in main.go:1.\n"}`)
	if r.Outcome != tools.OK || !r.Done || r.Summary != "It is in main.go:1." {
		t.Errorf("answer: %s done=%v %q", r.Outcome, r.Done, r.Summary)
	}
}

func TestReadWriteSetNeedsARunner(t *testing.T) {
	root, err := os.OpenRoot(tree(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := tools.New(tools.Config{Root: root, Policy: testPolicy()}); err == nil {
		t.Error("a set that may run commands was made without a runner")
	}
}
