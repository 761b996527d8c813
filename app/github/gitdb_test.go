package github_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
)

func TestCreateCommitIsTheAppsAndVerified(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/app", map[string]string{"a.txt": "a\n", "old/gone.txt": "bye\n"})
	ctx := t.Context()
	inst, err := w.newApp(t).Committer(w.inst, "acme/app")
	if err != nil {
		t.Fatal(err)
	}
	base, err := inst.BranchHead(ctx, "acme/app", "main")
	if err != nil || base == "" {
		t.Fatalf("main: %q %v", base, err)
	}
	if head, err := inst.BranchHead(ctx, "acme/app", "agent/1-x"); err != nil || head != "" {
		t.Fatalf("a missing branch: %q %v", head, err)
	}
	c, err := inst.CreateCommit(ctx, "acme/app", app.NewCommit{
		Parent: base, Message: "Fix it\n\nCo-authored-by: ada <7+ada@users.noreply.github.com>\n",
		Changes: []app.TreeChange{
			{Path: "old/gone.txt", Mode: "100644", Deleted: true},
			{Path: "bin/run", Mode: "100755", Content: []byte("#!/bin/sh\n")},
			{Path: "data/blob.bin", Mode: "100644", Content: []byte{0, 0xfe, 0xff}},
			{Path: "link", Mode: "120000", Content: []byte("a.txt")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Verified || c.Reason != "valid" || len(c.Parents) != 1 || c.Parents[0] != base {
		t.Errorf("commit %+v: want verified, on %s", c, base)
	}
	if err := inst.MoveBranch(ctx, "acme/app", "agent/1-x", "", c.SHA); err != nil {
		t.Fatal(err)
	}
	dir, err := w.sim.GitDir("acme/app")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "--git-dir="+dir, "ls-tree", "-r", "agent/1-x").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"100755 blob", "\tbin/run", "\tdata/blob.bin", "120000 blob", "\ta.txt"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("tree lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "gone.txt") {
		t.Errorf("deleted file kept:\n%s", out)
	}

	// Someone pushes meanwhile: the next commit, made on the head the task
	// saw, must not replace theirs.
	theirs, err := w.sim.Commit("acme/app", "agent/1-x", "grace", "mine", map[string]string{"a.txt": "grace\n"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := inst.CreateCommit(ctx, "acme/app", app.NewCommit{Parent: c.SHA, Message: "More",
		Changes: []app.TreeChange{{Path: "a.txt", Mode: "100644", Content: []byte("agent\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	err = inst.MoveBranch(ctx, "acme/app", "agent/1-x", c.SHA, next.SHA)
	if e, ok := errors.AsType[*app.Error](err); !ok || e.Code != app.EConflict || !strings.Contains(e.Message, "moved") {
		t.Fatalf("move over a concurrent push: %v, want a conflict", err)
	}
	if head, _ := inst.BranchHead(ctx, "acme/app", "agent/1-x"); head != theirs {
		t.Errorf("branch at %s after a refused move, want their %s", head, theirs)
	}
	if err := inst.MoveBranch(ctx, "acme/app", "agent/1-x", "", next.SHA); err == nil {
		t.Error("creating an existing branch succeeded")
	}

	// The App has no workflows permission: GitHub refuses such a tree.
	_, err = inst.CreateCommit(ctx, "acme/app", app.NewCommit{Parent: base, Message: "CI",
		Changes: []app.TreeChange{{Path: ".github/workflows/ci.yml", Mode: "100644", Content: []byte("on: push\n")}}})
	if app.ErrorCode(err) != app.EPolicy || !strings.Contains(err.Error(), "workflows") {
		t.Errorf("a workflow change: %v, want a policy refusal naming the permission", err)
	}
}
