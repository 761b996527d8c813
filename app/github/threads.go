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

const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100) {
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

// ReviewThreads lists the review threads of repo#pull, the first 100.
func (i *Installation) ReviewThreads(ctx context.Context, repo string, pull int) ([]app.ReviewThread, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	var data struct {
		Repository struct {
			PullRequest struct {
				ReviewThreads struct {
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
	if err := i.graphql(ctx, reviewThreadsQuery, map[string]any{"owner": owner, "name": name, "number": pull}, &data); err != nil {
		return nil, fmt.Errorf("list review threads of %s#%d: %w", repo, pull, err)
	}
	var out []app.ReviewThread
	for _, n := range data.Repository.PullRequest.ReviewThreads.Nodes {
		t := app.ReviewThread{ID: n.ID, Resolved: n.IsResolved}
		if len(n.Comments.Nodes) > 0 {
			t.CommentID = n.Comments.Nodes[0].DatabaseID
		}
		out = append(out, t)
	}
	return out, nil
}

// ResolveThread resolves review thread id (a GraphQL node id).
func (i *Installation) ResolveThread(ctx context.Context, id string) error {
	var data struct{}
	if err := i.graphql(ctx, resolveThreadMutation, map[string]any{"id": id}, &data); err != nil {
		return fmt.Errorf("resolve review thread %s: %w", id, err)
	}
	return nil
}
