package github

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentbot/agentbot/app"
)

// GitHub resolves a review thread only through its GraphQL API. Its
// endpoint is /graphql beside the REST root on github.com and
// /api/graphql beside /api/v3 on GitHub Enterprise Server: "../graphql"
// from the REST root is both.
const graphqlPath = "../graphql"

const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}`

const resolveThreadMutation = `mutation($id: ID!) {
  resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } }
}`

// graphql runs one GraphQL document and decodes its data into out.
func (i *Installation) graphql(ctx context.Context, query string, vars map[string]any, out any) error {
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	req, err := i.api.NewRequest("POST", graphqlPath, map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	var resp struct {
		Data   any `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	resp.Data = out
	if _, err := i.api.Do(ctx, req, &resp); err != nil {
		return err
	}
	if len(resp.Errors) > 0 {
		return errors.New(resp.Errors[0].Message)
	}
	return nil
}

// maxThreadPages bounds the pages of 100 review threads read of one pull
// request, so that no pull request keeps a task reading.
const maxThreadPages = 50

// ReviewThreads lists the review threads of repo#pull, a page of 100 at a
// time, up to maxThreadPages pages.
func (i *Installation) ReviewThreads(ctx context.Context, repo string, pull int) ([]app.ReviewThread, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	var out []app.ReviewThread
	vars := map[string]any{"owner": owner, "name": name, "number": pull, "after": nil}
	for range maxThreadPages {
		page, next, err := i.reviewThreads(ctx, vars)
		if err != nil {
			return nil, fmt.Errorf("list review threads of %s#%d: %w", repo, pull, err)
		}
		out = append(out, page...)
		if next == "" {
			break
		}
		vars["after"] = next
	}
	return out, nil
}

// reviewThreads reads one page of review threads, and the cursor of the
// next page, "" after the last.
func (i *Installation) reviewThreads(ctx context.Context, vars map[string]any) ([]app.ReviewThread, string, error) {
	var data struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
					PageInfo struct {
						HasNextPage bool   `json:"hasNextPage"`
						EndCursor   string `json:"endCursor"`
					} `json:"pageInfo"`
					Nodes []struct {
						ID         string `json:"id"`
						IsResolved bool   `json:"isResolved"`
						Comments   struct {
							Nodes []struct {
								DatabaseID int64 `json:"databaseId"`
							} `json:"nodes"`
						} `json:"comments"`
					} `json:"nodes"`
				} `json:"reviewThreads"`
			} `json:"pullRequest"`
		} `json:"repository"`
	}
	if err := i.graphql(ctx, reviewThreadsQuery, vars, &data); err != nil {
		return nil, "", err
	}
	threads := data.Repository.PullRequest.ReviewThreads
	var out []app.ReviewThread
	for _, n := range threads.Nodes {
		t := app.ReviewThread{ID: n.ID, Resolved: n.IsResolved}
		if len(n.Comments.Nodes) > 0 {
			t.CommentID = n.Comments.Nodes[0].DatabaseID
		}
		out = append(out, t)
	}
	if !threads.PageInfo.HasNextPage {
		return out, "", nil
	}
	return out, threads.PageInfo.EndCursor, nil
}

// ResolveThread resolves review thread id (a GraphQL node id).
func (i *Installation) ResolveThread(ctx context.Context, id string) error {
	var data struct{}
	if err := i.graphql(ctx, resolveThreadMutation, map[string]any{"id": id}, &data); err != nil {
		return fmt.Errorf("resolve review thread %s: %w", id, err)
	}
	return nil
}
