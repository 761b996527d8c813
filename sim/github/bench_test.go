package github_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-github/v62/github"
)

// BenchmarkCreateComment measures one authenticated REST write through
// go-github, the simulator's hottest path in agentbot's tests.
func BenchmarkCreateComment(b *testing.B) {
	w := newWorld(b)
	n, err := w.s.AddIssue(full, "octocat", "t", "")
	if err != nil {
		b.Fatal(err)
	}
	c := w.client(b, nil, nil)
	ctx := context.Background()
	for b.Loop() {
		if _, _, err := c.Issues.CreateComment(ctx, owner, name, n, &github.IssueComment{Body: github.String("x")}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetContent measures reading a file from the bare repository,
// as policy loading does for every task.
func BenchmarkGetContent(b *testing.B) {
	w := newWorld(b)
	c := w.client(b, nil, nil)
	ctx := context.Background()
	for b.Loop() {
		if _, _, _, err := c.Repositories.GetContents(ctx, owner, name, ".github/agent.yml", nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClone measures a full clone over smart HTTP through git
// http-backend.
func BenchmarkClone(b *testing.B) {
	w := newWorld(b)
	url := w.cloneURL(full, w.token(b, nil))
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		if out, err := git("", "clone", "--quiet", url, filepath.Join(dir, fmt.Sprint(i))); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}
