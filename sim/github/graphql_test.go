package github_test

import (
	"context"
	"fmt"
	"testing"

	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/google/go-github/v62/github"
)

type threadsAnswer struct {
	Data struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
					PageInfo struct {
						HasNextPage bool
						EndCursor   *string
					}
					Nodes []struct {
						ID         string
						IsResolved bool
						Comments   struct{ Nodes []struct{ DatabaseID int64 } }
					}
				}
			}
		}
		ResolveReviewThread *struct{ Thread struct{ IsResolved bool } }
	}
	Errors []struct{ Message string }
}

// graphql posts one document to the simulator's GraphQL endpoint, beside
// its REST root as on GitHub Enterprise Server.
func graphql(t *testing.T, c *github.Client, query string, vars map[string]any) threadsAnswer {
	t.Helper()
	req, err := c.NewRequest("POST", "../graphql", map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	var out threadsAnswer
	if _, err := c.Do(context.Background(), req, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The simulator answers the two GraphQL documents agentbot sends, for a
// token scoped to the repository, and refuses anything else as GitHub
// refuses a query: 200 with errors.
func TestGraphQLReviewThreads(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	w.pushBranch(t, full, "topic", "x.go", "package x\n")
	pr, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "grace", Title: "X", Head: "topic"})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := w.s.BranchSHA(full, "topic")
	if _, _, err := c.PullRequests.CreateReview(ctx, owner, name, pr, &github.PullRequestReviewRequest{CommitID: github.String(head), Event: github.String("COMMENT"),
		Comments: []*github.DraftReviewComment{{Path: github.String("x.go"), Line: github.Int(1), Side: github.String("RIGHT"), Body: github.String("here")}}}); err != nil {
		t.Fatal(err)
	}
	comment := w.s.ReviewComments(full, pr)[0]
	vars := map[string]any{"owner": owner, "name": name, "number": pr}

	got := graphql(t, c, githubsim.ReviewThreadsQuery, vars)
	threads := got.Data.Repository.PullRequest.ReviewThreads.Nodes
	if len(got.Errors) != 0 || len(threads) != 1 || threads[0].IsResolved || threads[0].Comments.Nodes[0].DatabaseID != comment.ID {
		t.Fatalf("threads %+v, errors %v; want the comment's open thread", threads, got.Errors)
	}
	for what, a := range map[string]threadsAnswer{
		"another document":       graphql(t, c, "query { viewer { login } }", nil),
		"a missing variable":     graphql(t, c, githubsim.ReviewThreadsQuery, map[string]any{"owner": owner, "name": name}),
		"a variable of bad type": graphql(t, c, githubsim.ReviewThreadsQuery, map[string]any{"owner": owner, "name": name, "number": "1"}),
		"another repository's token": graphql(t, w.client(t, nil, &github.InstallationTokenOptions{Repositories: []string{"other"}}),
			githubsim.ReviewThreadsQuery, vars),
		"a thread that is none": graphql(t, c, githubsim.ResolveThreadMutation, map[string]any{"id": "nope"}),
	} {
		if len(a.Errors) == 0 {
			t.Errorf("%s was answered without errors: %+v", what, a.Data)
		}
	}
	if comment.ResolvedBy != "" {
		t.Fatalf("a new thread is resolved by %q", comment.ResolvedBy)
	}
	resolved := graphql(t, c, githubsim.ResolveThreadMutation, map[string]any{"id": threads[0].ID})
	if len(resolved.Errors) != 0 || resolved.Data.ResolveReviewThread == nil || !resolved.Data.ResolveReviewThread.Thread.IsResolved {
		t.Fatalf("resolve: %+v", resolved)
	}
	if by := w.s.ReviewComments(full, pr)[0].ResolvedBy; by != w.s.App().BotLogin {
		t.Errorf("resolved by %q; want the App", by)
	}
	if got := graphql(t, c, githubsim.ReviewThreadsQuery, vars); !got.Data.Repository.PullRequest.ReviewThreads.Nodes[0].IsResolved {
		t.Error("the thread is listed open after it was resolved")
	}
}

// Threads come a page of 100 at a time, each page's end a cursor to pass
// back as $after; a cursor the simulator did not give is an error.
func TestGraphQLReviewThreadsPages(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := w.client(t, nil, nil)
	w.pushBranch(t, full, "topic", "x.go", "package x\n")
	pr, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "grace", Title: "X", Head: "topic"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for n := range 130 {
		id, err := w.s.AddReviewComment(full, pr, 0, "grace", "x.go", 1, fmt.Sprintf("thread %d", n), 0)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	vars := map[string]any{"owner": owner, "name": name, "number": pr}
	first := graphql(t, c, githubsim.ReviewThreadsQuery, vars).Data.Repository.PullRequest.ReviewThreads
	if len(first.Nodes) != 100 || !first.PageInfo.HasNextPage || first.PageInfo.EndCursor == nil {
		t.Fatalf("first page: %d threads, next %v", len(first.Nodes), first.PageInfo.HasNextPage)
	}
	vars["after"] = *first.PageInfo.EndCursor
	second := graphql(t, c, githubsim.ReviewThreadsQuery, vars).Data.Repository.PullRequest.ReviewThreads
	if len(second.Nodes) != 30 || second.PageInfo.HasNextPage || second.Nodes[29].Comments.Nodes[0].DatabaseID != ids[129] {
		t.Fatalf("second page: %d threads, next %v; want the last 30", len(second.Nodes), second.PageInfo.HasNextPage)
	}
	vars["after"] = "not a cursor"
	if a := graphql(t, c, githubsim.ReviewThreadsQuery, vars); len(a.Errors) == 0 {
		t.Errorf("a cursor it did not give was answered: %+v", a.Data)
	}
}
