package github_test

import (
	"fmt"
	"testing"

	"github.com/agentbot/agentbot/app"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

func TestConversationReadsThePullRequestsWholeThread(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{"main.go": "package main\n"})
	w.push(t, "acme/a", "feature", map[string]string{"main.go": "package main // changed\n"})
	pull, err := w.sim.AddPullRequest("acme/a", githubsim.PullOptions{Author: "bob", Title: "Feature", Body: "adds it", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}
	// More comments than one page holds.
	for i := range 130 {
		if _, err := w.sim.AddComment("acme/a", pull, "ada", fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	review, err := w.sim.AddReview("acme/a", pull, "lin", "CHANGES_REQUESTED", "Two things.")
	if err != nil {
		t.Fatal(err)
	}
	root, err := w.sim.AddReviewComment("acme/a", pull, review, "lin", "main.go", 1, "Say why.", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.AddReviewComment("acme/a", pull, 0, "ada", "", 0, "Will do.", root); err != nil {
		t.Fatal(err)
	}
	inst := w.installation(t, "acme/a")
	info, err := inst.Issue(t.Context(), "acme/a", pull)
	if err != nil {
		t.Fatal(err)
	}
	c, err := inst.Conversation(t.Context(), "acme/a", pull, info)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[app.PostKind]int{}
	for _, p := range c.Posts {
		counts[p.Kind]++
	}
	if counts[app.PostBody] != 1 || counts[app.PostComment] != 130 || counts[app.PostReview] != 1 || counts[app.PostReviewComment] != 2 || c.Truncated {
		t.Fatalf("posts by kind %v, truncated %v", counts, c.Truncated)
	}
	body := c.Posts[0]
	if body.Author.Login != "bob" || body.Author.Type != "User" || body.Body != "adds it" || body.At.IsZero() {
		t.Errorf("description %+v", body)
	}
	var rv, reply app.Post
	for _, p := range c.Posts {
		switch {
		case p.Kind == app.PostReview:
			rv = p
		case p.Kind == app.PostReviewComment && p.InReplyTo != 0:
			reply = p
		}
	}
	if rv.State != "CHANGES_REQUESTED" || rv.Author.Login != "lin" || rv.Body != "Two things." || rv.At.IsZero() {
		t.Errorf("review %+v", rv)
	}
	if reply.InReplyTo != root || reply.Path != "main.go" || reply.Line != 1 || reply.Author.Login != "ada" {
		t.Errorf("reply %+v; want in thread %d on main.go:1", reply, root)
	}

	// An issue has no reviews to read.
	issue, err := w.sim.AddIssue("acme/a", "ada", "Bug", "It breaks.")
	if err != nil {
		t.Fatal(err)
	}
	info, err = inst.Issue(t.Context(), "acme/a", issue)
	if err != nil {
		t.Fatal(err)
	}
	if c, err = inst.Conversation(t.Context(), "acme/a", issue, info); err != nil || len(c.Posts) != 1 {
		t.Errorf("issue conversation %+v, %v; want its description alone", c.Posts, err)
	}
}

func TestConversationOfAVeryLongThreadKeepsItsEnds(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.addRepo(t, "acme/a", map[string]string{"main.go": "package main\n"})
	issue, err := w.sim.AddIssue("acme/a", "ada", "Long", "It goes on.")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1234
	for i := range n {
		if _, err := w.sim.AddComment("acme/a", issue, "ada", fmt.Sprintf("comment %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	inst := w.installation(t, "acme/a")
	info, err := inst.Issue(t.Context(), "acme/a", issue)
	if err != nil {
		t.Fatal(err)
	}
	c, err := inst.Conversation(t.Context(), "acme/a", issue, info)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range c.Posts {
		seen[p.Body] = true
	}
	// 3 pages from the start, 7 from the end (the last holds 34).
	if !c.Truncated || len(c.Posts) != 1+300+634 {
		t.Errorf("%d posts, truncated %v; want the description, the first 300 comments and the last 634", len(c.Posts), c.Truncated)
	}
	for _, want := range []string{"comment 0", "comment 299", "comment 600", fmt.Sprintf("comment %d", n-1)} {
		if !seen[want] {
			t.Errorf("%q was not read", want)
		}
	}
	if seen["comment 300"] || seen["comment 599"] {
		t.Error("the middle of the thread was read")
	}
}
