package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// GitHub resolves a pull request's review threads only through its
// GraphQL API (there is no REST operation for it), so the simulator
// answers the two GraphQL documents agentbot sends, at GitHub Enterprise's
// path for it, /api/graphql beside /api/v3: listing a pull request's
// review threads and resolving one. It is no GraphQL server: a document
// that is not one of these, once its whitespace is folded, is answered as
// GitHub answers a query it cannot run (200 with "errors"), and the
// variables are checked for the types the documents declare. A thread's
// node id is its first comment's, typed PullRequestReviewThread.

// ReviewThreadsQuery lists a pull request's review threads, 100 after
// the cursor $after (null for the first page): id, whether resolved, and
// the database id of the comment that begins each.
const ReviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes { id isResolved comments(first: 1) { nodes { databaseId } } }
      }
    }
  }
}`

// ResolveThreadMutation resolves the review thread $id.
const ResolveThreadMutation = `mutation($id: ID!) {
  resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } }
}`

// foldSpace folds a document's runs of white space into one space.
func foldSpace(doc string) string { return strings.Join(strings.Fields(doc), " ") }

// gqlError is a message as GitHub's GraphQL API words it, in "errors".
type gqlError string

func (e gqlError) Error() string { return string(e) }

func threadID(c *ReviewComment) string { return nodeID("PullRequestReviewThread", c.ID) }

type graphqlRequest struct {
	Query     string                     `json:"query"`
	Variables map[string]json.RawMessage `json:"variables"`
}

func (s *Server) graphql(w http.ResponseWriter, r *http.Request) {
	tok := restToken(r)
	if tok == "" {
		writeError(w, http.StatusUnauthorized, "This endpoint requires you to be authenticated.")
		return
	}
	var req graphqlRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	var (
		data any
		err  error
	)
	switch foldSpace(req.Query) {
	case foldSpace(ReviewThreadsQuery):
		data, err = s.reviewThreads(tok, req.Variables)
	case foldSpace(ResolveThreadMutation):
		data, err = s.resolveThread(tok, req.Variables)
	default:
		err = gqlError(fmt.Sprintf("the simulator answers only the documents of graphql.go, not %q", req.Query))
	}
	if err != nil {
		writeJSON(w, http.StatusOK, obj{"data": nil, "errors": []obj{{"message": err.Error()}}})
		return
	}
	writeJSON(w, http.StatusOK, obj{"data": data})
}

// variable decodes variable name, of GraphQL type typ, into v.
func variable(vars map[string]json.RawMessage, name, typ string, v any) error {
	raw, ok := vars[name]
	if !ok {
		return gqlError(fmt.Sprintf("Variable $%s of type %s was provided invalid value", name, typ))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return gqlError(fmt.Sprintf("Variable $%s of type %s was provided invalid value", name, typ))
	}
	return nil
}

// access checks tok on repoName as checkToken does; GraphQL answers
// every refusal as the object not being found, or not accessible.
func (s *Server) access(tok, repoName, level string) (*repo, error) {
	rp, status := s.checkToken(tok, repoName, level, "pull_requests")
	switch status {
	case http.StatusOK:
		return rp, nil
	case http.StatusForbidden:
		return nil, gqlError("Resource not accessible by integration")
	}
	return nil, gqlError(fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", repoName))
}

// threadsPage is how many threads a page of ReviewThreadsQuery holds.
const threadsPage = 100

func (s *Server) reviewThreads(tok string, vars map[string]json.RawMessage) (any, error) {
	var owner, name string
	var number int
	var after *string // nullable
	if _, ok := vars["after"]; ok {
		if err := variable(vars, "after", "String", &after); err != nil {
			return nil, err
		}
	}
	for _, v := range []struct {
		name, typ string
		into      any
	}{{"owner", "String!", &owner}, {"name", "String!", &name}, {"number", "Int!", &number}} {
		if err := variable(vars, v.name, v.typ, v.into); err != nil {
			return nil, err
		}
	}
	rp, err := s.access(tok, owner+"/"+name, "read")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is, err := rp.issueLocked(number)
	if err != nil || is.Pull == nil {
		return nil, gqlError(fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", number))
	}
	var all []obj
	for _, c := range rp.reviewCs {
		if c.Pull == number && c.InReplyTo == 0 {
			all = append(all, obj{"id": threadID(c), "isResolved": c.ResolvedBy != "",
				"comments": obj{"nodes": []obj{{"databaseId": c.ID}}}})
		}
	}
	// A cursor is the count of threads before the page, as an opaque
	// string: a client only passes back what it was given.
	from := 0
	if after != nil {
		n, err := strconv.Atoi(strings.TrimPrefix(*after, "cursor:"))
		if err != nil || !strings.HasPrefix(*after, "cursor:") || n < 0 || n > len(all) {
			return nil, gqlError(fmt.Sprintf("`%s` does not appear to be a valid cursor.", *after))
		}
		from = n
	}
	to := min(from+threadsPage, len(all))
	nodes := append([]obj{}, all[from:to]...)
	page := obj{"hasNextPage": to < len(all), "endCursor": nil}
	if to > from {
		page["endCursor"] = "cursor:" + strconv.Itoa(to)
	}
	return obj{"repository": obj{"pullRequest": obj{"reviewThreads": obj{"pageInfo": page, "nodes": nodes}}}}, nil
}

func (s *Server) resolveThread(tok string, vars map[string]json.RawMessage) (any, error) {
	var id string
	if err := variable(vars, "id", "ID!", &id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	c, rp := s.threadLocked(id)
	s.mu.Unlock()
	if c == nil {
		return nil, gqlError(fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id))
	}
	if _, err := s.access(tok, rp.fullName(), "write"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.ResolvedBy == "" {
		c.ResolvedBy = s.app.BotLogin
	}
	return obj{"resolveReviewThread": obj{"thread": obj{"id": id, "isResolved": true}}}, nil
}

// threadLocked finds the comment that begins the thread id.
func (s *Server) threadLocked(id string) (*ReviewComment, *repo) {
	for _, rp := range s.repos {
		for _, c := range rp.reviewCs {
			if c.InReplyTo == 0 && threadID(c) == id {
				return c, rp
			}
		}
	}
	return nil, nil
}

// ResolveThread resolves, as login, the thread that review comment id
// begins or is in, as a person does on the pull request's page.
func (s *Server) ResolveThread(repoName string, id int64, login string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(repoName)
	if err != nil {
		return err
	}
	root := id
	for _, c := range rp.reviewCs {
		if c.ID == id && c.InReplyTo != 0 {
			root = c.InReplyTo
		}
	}
	for _, c := range rp.reviewCs {
		if c.ID == root {
			c.ResolvedBy = login
			return nil
		}
	}
	return fmt.Errorf("no review comment %d in %s", id, repoName)
}

// DismissReview dismisses review id of repo, as someone with write access
// does on the pull request's page: its state becomes DISMISSED, its
// comments stay.
func (s *Server) DismissReview(repoName string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(repoName)
	if err != nil {
		return err
	}
	for _, v := range rp.reviews {
		if v.ID == id {
			v.State = "DISMISSED"
			return nil
		}
	}
	return fmt.Errorf("no review %d in %s", id, repoName)
}
