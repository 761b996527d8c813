package github_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"
)

// TestGitDatabase builds a commit through blobs, a tree over a base tree,
// a commit and ref updates, checks every answer against the OpenAPI
// subset, and reads the result back with git.
func TestGitDatabase(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newValidator(t)
	c := w.client(t, v, nil)
	ctx := context.Background()
	mainSHA := w.mustBranchSHA(t, "main")

	binary := []byte{0, 1, 2, 0xff, '\n'}
	blob, _, err := c.Git.CreateBlob(ctx, owner, name, &github.Blob{
		Content: github.String(base64.StdEncoding.EncodeToString(binary)), Encoding: github.String("base64"),
	})
	if err != nil {
		t.Fatal(err)
	}
	script, _, err := c.Git.CreateBlob(ctx, owner, name, &github.Blob{Content: github.String("#!/bin/sh\necho hi\n"), Encoding: github.String("utf-8")})
	if err != nil {
		t.Fatal(err)
	}
	base, _, err := c.Git.GetCommit(ctx, owner, name, mainSHA)
	if err != nil {
		t.Fatal(err)
	}
	if base.GetVerification().GetVerified() || base.GetVerification().GetReason() != "unsigned" {
		t.Errorf("a commit pushed over git shows as %+v, want unsigned", base.GetVerification())
	}
	tree, _, err := c.Git.CreateTree(ctx, owner, name, base.GetTree().GetSHA(), []*github.TreeEntry{
		{Path: github.String("pkg/new/data.bin"), Mode: github.String("100644"), Type: github.String("blob"), SHA: blob.SHA},
		{Path: github.String("run.sh"), Mode: github.String("100755"), Type: github.String("blob"), SHA: script.SHA},
		{Path: github.String("link"), Mode: github.String("120000"), Type: github.String("blob"), Content: github.String("README.md")},
		{Path: github.String("cmd/widget/main.go"), Mode: github.String("100644"), Type: github.String("blob")}, // sha null: delete
		{Path: github.String("README.md"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("# widgets v2\n")},
		{Path: github.String("*.md"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("a name, not a pattern\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	commit, _, err := c.Git.CreateCommit(ctx, owner, name, &github.Commit{
		Message: github.String("Add data\n\nCo-authored-by: octocat <1+octocat@users.noreply.github.com>\n"),
		Tree:    &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: github.String(mainSHA)}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if vr := commit.GetVerification(); !vr.GetVerified() || vr.GetReason() != "valid" || vr.GetSignature() == "" {
		t.Errorf("the App's commit shows as %+v, want verified", vr)
	}
	if !strings.HasSuffix(commit.GetAuthor().GetEmail(), "+"+w.s.App().BotLogin+"@users.noreply.github.com") {
		t.Errorf("author %q, want the App's bot", commit.GetAuthor().GetEmail())
	}
	if _, _, err := c.Git.CreateRef(ctx, owner, name, &github.Reference{
		Ref: github.String("refs/heads/agent/1-data"), Object: &github.GitObject{SHA: commit.SHA},
	}); err != nil {
		t.Fatal(err)
	}

	dir, err := w.s.GitDir(full)
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	git("fsck", "--strict", "--no-dangling")
	ls := git("ls-tree", "-r", "agent/1-data")
	for _, want := range []string{"100644 blob " + blob.GetSHA() + "\tpkg/new/data.bin", "100755 blob " + script.GetSHA() + "\trun.sh", "120000 blob", "\tlink", "\t.github/agent.yml", "\tREADME.md", "\t*.md"} {
		if !strings.Contains(ls, want) {
			t.Errorf("tree lacks %q:\n%s", want, ls)
		}
	}
	if strings.Contains(ls, "cmd/widget/main.go") {
		t.Errorf("deleted file still in the tree:\n%s", ls)
	}
	if got := git("cat-file", "blob", blob.GetSHA()); got != string(binary) {
		t.Errorf("binary blob reads %q", got)
	}
	if got := strings.TrimSpace(git("rev-parse", "agent/1-data^")); got != mainSHA {
		t.Errorf("parent %s, want %s", got, mainSHA)
	}
	if ok, reason, err := w.s.CommitVerification(full, commit.GetSHA()); err != nil || !ok || reason != "valid" {
		t.Errorf("CommitVerification = %v %q %v", ok, reason, err)
	}
	// The REST commit shows the same verification as the git database.
	if rc, _, err := c.Repositories.GetCommit(ctx, owner, name, commit.GetSHA(), nil); err != nil ||
		!rc.GetCommit().GetVerification().GetVerified() || rc.GetCommit().GetVerification().GetReason() != "valid" {
		t.Errorf("repos/get-commit of the App's commit: %+v, %v; want verified", rc.GetCommit().GetVerification(), err)
	}

	// Refusals, each with GitHub's status.
	status := func(r *github.Response) int {
		if r == nil {
			return 0
		}
		return r.StatusCode
	}
	_, r, _ := c.Git.CreateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/agent/1-data"), Object: &github.GitObject{SHA: commit.SHA}})
	if status(r) != http.StatusUnprocessableEntity {
		t.Errorf("create an existing ref: %d, want 422", status(r))
	}
	_, r, _ = c.Git.UpdateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/agent/1-data"), Object: &github.GitObject{SHA: github.String(mainSHA)}}, false)
	if status(r) != http.StatusUnprocessableEntity {
		t.Errorf("move a branch backwards without force: %d, want 422", status(r))
	}
	_, r, _ = c.Git.CreateTree(ctx, owner, name, base.GetTree().GetSHA(), []*github.TreeEntry{{Path: github.String("nope.txt"), Mode: github.String("100644"), Type: github.String("blob")}})
	if status(r) != http.StatusUnprocessableEntity {
		t.Errorf("delete a missing path: %d, want 422", status(r))
	}
	_, r, _ = c.Git.CreateTree(ctx, owner, name, "", []*github.TreeEntry{{Path: github.String("../x"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("x")}})
	if status(r) != http.StatusUnprocessableEntity {
		t.Errorf("a path leaving the tree: %d, want 422", status(r))
	}
	_, r, _ = c.Git.CreateCommit(ctx, owner, name, &github.Commit{Message: github.String("x"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: tree.SHA}}}, nil)
	if status(r) != http.StatusUnprocessableEntity {
		t.Errorf("a tree as parent: %d, want 422", status(r))
	}
	authored, _, err := c.Git.CreateCommit(ctx, owner, name, &github.Commit{
		Message: github.String("by hand"), Tree: &github.Tree{SHA: tree.SHA}, Parents: []*github.Commit{{SHA: commit.SHA}},
		Author: &github.CommitAuthor{Name: github.String("Someone"), Email: github.String("someone@example.com")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authored.GetVerification().GetVerified() {
		t.Error("a commit naming its own author is signed")
	}
	ref, _, err := c.Git.UpdateRef(ctx, owner, name, &github.Reference{Ref: github.String("refs/heads/agent/1-data"), Object: &github.GitObject{SHA: authored.SHA}}, false)
	if err != nil || ref.GetObject().GetSHA() != authored.GetSHA() {
		t.Fatalf("fast-forward: %v %v", ref, err)
	}
	if got, _, err := c.Git.GetRef(ctx, owner, name, "heads/agent/1-data"); err != nil || got.GetObject().GetSHA() != authored.GetSHA() {
		t.Errorf("get ref: %v %v", got, err)
	}
	if _, r, _ := c.Git.GetRef(ctx, owner, name, "heads/none"); status(r) != http.StatusNotFound {
		t.Errorf("get a missing ref: %d, want 404", status(r))
	}
	if got, _, err := c.Git.GetTree(ctx, owner, name, tree.GetSHA(), true); err != nil || len(got.Entries) < 6 {
		t.Errorf("get tree: %v %v", got, err)
	}

	// Without workflows: write, a tree touching a workflow is a bare 404.
	_, r, _ = c.Git.CreateTree(ctx, owner, name, base.GetTree().GetSHA(), []*github.TreeEntry{{Path: github.String(".github/workflows/ci.yml"), Mode: github.String("100644"), Type: github.String("blob"), Content: github.String("on: push\n")}})
	if status(r) != http.StatusNotFound {
		t.Errorf("a workflow in a tree: %d, want 404", status(r))
	}

	// A token that may only read cannot write.
	ro := w.client(t, v, &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}})
	if _, r, _ := ro.Git.CreateBlob(ctx, owner, name, &github.Blob{Content: github.String("x")}); status(r) != http.StatusForbidden {
		t.Errorf("blob with a read token: %d, want 403", status(r))
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	for _, f := range v.failures {
		t.Error(f)
	}
	for _, op := range []string{"git/create-blob", "git/create-tree", "git/get-tree", "git/create-commit", "git/get-commit", "git/get-ref", "git/create-ref", "git/update-ref"} {
		if _, ok := v.seen[op]; !ok {
			t.Errorf("operation %s was never exercised", op)
		}
	}
}
