package github_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentbot/agentbot/app/apptest"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/go-github/v62/github"
)

func TestMain(m *testing.M) {
	// The description marks html_url and friends as format "uri";
	// kin-openapi leaves that format unchecked unless told.
	openapi3.DefineStringFormatValidator("uri", uriFormat{})
	os.Exit(m.Run())
}

type uriFormat struct{}

func (uriFormat) Validate(v string) error {
	u, err := url.Parse(v)
	if err != nil || !u.IsAbs() {
		return fmt.Errorf("%q is not an absolute URI", v)
	}
	return nil
}

// validator checks every answer that passes through it
// against GitHub's OpenAPI description, and remembers which operations
// it saw and which answers failed.
type validator struct {
	next   http.RoundTripper
	router routers.Router

	mu       sync.Mutex
	seen     map[string][]int // operationId -> statuses
	failures []string
	missing  map[string][]string // operationId -> fields of GitHub's example we lack
}

func newValidator(t *testing.T) *validator {
	t.Helper()
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromFile(filepath.Join(apptest.Fixtures(t), "github-rest-openapi-subset.json"))
	if err != nil {
		t.Fatalf("load OpenAPI subset: %v", err)
	}
	// GitHub's own examples break its schemas (a repository example lacks
	// "language"), so only the schemas are checked.
	if err := doc.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
		t.Fatalf("OpenAPI subset is invalid: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &validator{next: http.DefaultTransport, router: router, seen: map[string][]int{}, missing: map[string][]string{}}
}

func (v *validator) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := v.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	v.check(req, resp, body)
	return resp, nil
}

// check validates one exchange. The description's server is
// https://api.github.com, so the request is matched as if sent there.
func (v *validator) check(req *http.Request, resp *http.Response, body []byte) {
	as := req.Clone(context.Background())
	as.URL.Scheme, as.URL.Host, as.Host = "https", "api.github.com", "api.github.com"
	as.URL.Path = strings.TrimPrefix(as.URL.Path, "/api/v3")
	as.URL.RawPath = ""
	// A contents path or a ref name holds slashes, which a {path} or
	// {ref} template cannot match; GitHub documents the parameter as the
	// whole rest.
	for _, sep := range []string{"/contents/", "/git/ref/", "/git/refs/"} {
		if before, rest, ok := strings.Cut(as.URL.Path, sep); ok {
			as.URL.Path = before + sep + strings.ReplaceAll(rest, "/", "%2F")
			break
		}
	}
	route, params, err := v.router.FindRoute(as)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.failures = append(v.failures, fmt.Sprintf("%s %s: no operation in the subset: %v", req.Method, req.URL.Path, err))
		return
	}
	op := route.Operation.OperationID
	v.seen[op] = append(v.seen[op], resp.StatusCode)
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}
	// Only answers are checked: requests are go-github's, and some tests
	// send invalid ones on purpose.
	in := &openapi3filter.RequestValidationInput{Request: as, PathParams: params, Route: route, Options: opts}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header, Options: opts}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		v.failures = append(v.failures, fmt.Sprintf("%s %d response: %v", op, resp.StatusCode, err))
	}
	v.compareWithExamples(op, route, resp.StatusCode, body)
}

// compareWithExamples records the fields of GitHub's documented example
// answers that ours lack: the schemas require few fields, and a client
// may read any of the others.
func (v *validator) compareWithExamples(op string, route *routers.Route, status int, body []byte) {
	ref := route.Operation.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil {
		return
	}
	var ours any
	if err := json.Unmarshal(body, &ours); err != nil {
		return
	}
	for _, ex := range mt.Examples {
		if ex.Value != nil {
			for _, p := range missingFields("", ex.Value.Value, ours) {
				if !slices.Contains(v.missing[op], p) {
					v.missing[op] = append(v.missing[op], p)
				}
			}
		}
	}
}

// missingFields lists the object keys of want, recursively, that got
// lacks; arrays are compared by their first elements.
func missingFields(at string, want, got any) []string {
	var out []string
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return nil // null or another type: the schema check judges it
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				out = append(out, at+"/"+k)
				continue
			}
			out = append(out, missingFields(at+"/"+k, wv, gv)...)
		}
	case []any:
		if g, ok := got.([]any); ok && len(w) > 0 && len(g) > 0 {
			out = missingFields(at+"/0", w[0], g[0])
		}
	}
	return out
}

// TestConformance drives every operation of the OpenAPI subset through a
// real go-github client, answers and refusals both, and validates each
// exchange against the description.
func TestConformance(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	v := newValidator(t)
	c := w.client(t, v, nil)
	ctx := context.Background()
	if err := w.s.SetPermission(full, "octocat", "maintain"); err != nil {
		t.Fatal(err)
	}
	issue, err := w.s.AddIssue(full, "octocat", "Widgets crash", "They crash.\n\n/agent fix")
	if err != nil {
		t.Fatal(err)
	}
	userComment, err := w.s.AddComment(full, issue, "octocat", "/agent fix please")
	if err != nil {
		t.Fatal(err)
	}
	w.pushBranch(t, full, "agent/1-fix", "fix.go", "package fix\n")
	mainSHA := w.mustBranchSHA(t, "main")

	steps := []struct {
		name string
		call func() (*github.Response, error)
		want int
	}{
		{"repos/get", func() (*github.Response, error) {
			_, r, err := c.Repositories.Get(ctx, owner, name)
			return r, err
		}, 200},
		{"repos/get missing", func() (*github.Response, error) {
			_, r, err := c.Repositories.Get(ctx, owner, "missing")
			return r, err
		}, 404},
		{"permission", func() (*github.Response, error) {
			_, r, err := c.Repositories.GetPermissionLevel(ctx, owner, name, "octocat")
			return r, err
		}, 200},
		{"permission unknown user", func() (*github.Response, error) {
			_, r, err := c.Repositories.GetPermissionLevel(ctx, owner, name, "nobody-here")
			return r, err
		}, 404},
		{"contents file", func() (*github.Response, error) {
			_, _, r, err := c.Repositories.GetContents(ctx, owner, name, ".github/agent.yml", &github.RepositoryContentGetOptions{Ref: mainSHA})
			return r, err
		}, 200},
		{"contents dir", func() (*github.Response, error) {
			_, _, r, err := c.Repositories.GetContents(ctx, owner, name, "cmd", nil)
			return r, err
		}, 200},
		{"contents missing", func() (*github.Response, error) {
			_, _, r, err := c.Repositories.GetContents(ctx, owner, name, "nope.txt", nil)
			return r, err
		}, 404},
		{"issues/get", func() (*github.Response, error) {
			_, r, err := c.Issues.Get(ctx, owner, name, issue)
			return r, err
		}, 200},
		{"issues/get missing", func() (*github.Response, error) {
			_, r, err := c.Issues.Get(ctx, owner, name, 999)
			return r, err
		}, 404},
		{"reaction", func() (*github.Response, error) {
			_, r, err := c.Reactions.CreateIssueCommentReaction(ctx, owner, name, userComment, "eyes")
			return r, err
		}, 201},
		{"reaction again", func() (*github.Response, error) {
			_, r, err := c.Reactions.CreateIssueCommentReaction(ctx, owner, name, userComment, "eyes")
			return r, err
		}, 200},
		{"reaction invalid", func() (*github.Response, error) {
			_, r, err := c.Reactions.CreateIssueCommentReaction(ctx, owner, name, userComment, "thumbsup")
			return r, err
		}, 422},
		{"create comment", func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, owner, name, issue, &github.IssueComment{Body: github.String("Queued.")})
			return r, err
		}, 201},
		{"create comment too long", func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, owner, name, issue, &github.IssueComment{Body: github.String(strings.Repeat("x", 65537))})
			return r, err
		}, 422},
		{"create comment missing issue", func() (*github.Response, error) {
			_, r, err := c.Issues.CreateComment(ctx, owner, name, 999, &github.IssueComment{Body: github.String("x")})
			return r, err
		}, 404},
		{"list comments", func() (*github.Response, error) {
			_, r, err := c.Issues.ListComments(ctx, owner, name, issue, &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 1}})
			return r, err
		}, 200},
		{"update comment", func() (*github.Response, error) {
			list, _, err := c.Issues.ListComments(ctx, owner, name, issue, nil)
			if err != nil {
				return nil, err
			}
			_, r, err := c.Issues.EditComment(ctx, owner, name, list[len(list)-1].GetID(), &github.IssueComment{Body: github.String("Running.")})
			return r, err
		}, 200},
		{"update comment too long", func() (*github.Response, error) {
			list, _, err := c.Issues.ListComments(ctx, owner, name, issue, nil)
			if err != nil {
				return nil, err
			}
			_, r, err := c.Issues.EditComment(ctx, owner, name, list[len(list)-1].GetID(), &github.IssueComment{Body: github.String(strings.Repeat("y", 70000))})
			return r, err
		}, 422},
		{"create pull", func() (*github.Response, error) {
			_, r, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{
				Title: github.String("Fix widgets"), Head: github.String("agent/1-fix"), Base: github.String("main"),
				Body: github.String("Fixes #1"), Draft: github.Bool(true),
			})
			return r, err
		}, 201},
		{"create pull twice", func() (*github.Response, error) {
			_, r, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{
				Title: github.String("Fix widgets"), Head: github.String("agent/1-fix"), Base: github.String("main"),
			})
			return r, err
		}, 422},
		{"create pull no branch", func() (*github.Response, error) {
			_, r, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{
				Title: github.String("x"), Head: github.String("nope"), Base: github.String("main"),
			})
			return r, err
		}, 422},
		{"list pulls by head", func() (*github.Response, error) {
			_, r, err := c.PullRequests.List(ctx, owner, name, &github.PullRequestListOptions{Head: owner + ":agent/1-fix", State: "all"})
			return r, err
		}, 200},
		{"get pull", func() (*github.Response, error) {
			_, r, err := c.PullRequests.Get(ctx, owner, name, 2)
			return r, err
		}, 200},
		{"get pull missing", func() (*github.Response, error) {
			_, r, err := c.PullRequests.Get(ctx, owner, name, issue)
			return r, err
		}, 404},
		{"create review", func() (*github.Response, error) {
			_, r, err := c.PullRequests.CreateReview(ctx, owner, name, 2, &github.PullRequestReviewRequest{
				Event: github.String("COMMENT"), Body: github.String("Trace attached."),
				Comments: []*github.DraftReviewComment{{Path: github.String("fix.go"), Line: github.Int(1), Side: github.String("RIGHT"), Body: github.String("Here.")}},
			})
			return r, err
		}, 200},
		{"approve own pull", func() (*github.Response, error) {
			_, r, err := c.PullRequests.CreateReview(ctx, owner, name, 2, &github.PullRequestReviewRequest{Event: github.String("APPROVE")})
			return r, err
		}, 422},
		{"list reviews", func() (*github.Response, error) {
			if _, err := w.s.AddReview(full, 2, "octocat", "CHANGES_REQUESTED", "Please rename it."); err != nil {
				return nil, err
			}
			_, r, err := c.PullRequests.ListReviews(ctx, owner, name, 2, &github.ListOptions{PerPage: 1})
			return r, err
		}, 200},
		{"list review comments", func() (*github.Response, error) {
			_, r, err := c.PullRequests.ListComments(ctx, owner, name, 2, nil)
			return r, err
		}, 200},
		{"create check run", func() (*github.Response, error) {
			_, r, err := c.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{
				Name: "agentbot", HeadSHA: mainSHA, Status: github.String("in_progress"), ExternalID: github.String("task-1"),
			})
			return r, err
		}, 201},
		{"update check run", func() (*github.Response, error) {
			runs := w.s.CheckRuns(full)
			_, r, err := c.Checks.UpdateCheckRun(ctx, owner, name, runs[0].ID, github.UpdateCheckRunOptions{
				Name: "agentbot", Status: github.String("completed"), Conclusion: github.String("success"),
				Output: &github.CheckRunOutput{Title: github.String("Checks passed"), Summary: github.String("**2/2** checks green")},
			})
			return r, err
		}, 200},
	}
	for _, st := range steps {
		r, err := st.call()
		if r == nil {
			t.Fatalf("%s: no response: %v", st.name, err)
		}
		if r.StatusCode != st.want {
			t.Errorf("%s: status %d (%v), want %d", st.name, r.StatusCode, err, st.want)
		}
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	for _, f := range v.failures {
		t.Error(f)
	}
	want := []string{
		"apps/create-installation-access-token", "repos/get", "repos/get-collaborator-permission-level",
		"repos/get-content", "issues/list-comments", "issues/create-comment", "issues/update-comment",
		"reactions/create-for-issue-comment", "issues/get", "pulls/get", "pulls/list", "pulls/create",
		"checks/create", "checks/update", "pulls/list-review-comments", "pulls/create-review",
		"pulls/list-reviews",
	}
	for _, op := range want {
		if !slices.Contains(slices.Collect(mapKeys(v.seen)), op) {
			t.Errorf("operation %s was never exercised", op)
		}
	}
	// Fields of GitHub's examples that we leave out, by name, and why.
	absent := map[string]string{
		"repositories":        "listed only for a token scoped to repositories",
		"parent":              "forks only",
		"source":              "forks only",
		"template_repository": "repositories made from a template only",
		"permissions":         "the caller's permissions on a repository, given to user tokens",
		"submodule_git_url":   "submodules only",
		"target":              "symbolic links only",
		"in_reply_to_id":      "replies only",
		"single_file":         "the example App's single-file permission",
		"$ref":                "an unresolved reference in GitHub's example",
	}
	for op, fields := range v.missing {
		for _, f := range fields {
			if _, ok := absent[path.Base(f)]; !ok {
				t.Errorf("%s: field %s of GitHub's example answer is missing", op, f)
			}
		}
	}
	if len(v.seen) != len(want) {
		t.Errorf("exercised %d operations, want the %d of the subset: %v", len(v.seen), len(want), v.seen)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
