package github_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/google/go-github/v62/github"
)

// get fetches the repository with tok and returns the answer.
func get(t *testing.T, ctx context.Context, w *world, tok string) (*http.Response, map[string]any, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.s.APIURL()+"/repos/"+full, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "token "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	return resp, body, nil
}

func TestFaultsFailTheNextCallsThenPass(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(90 * time.Second).Truncate(time.Second)
	tests := []struct {
		name    string
		fault   githubsim.Fault
		want    []int
		headers map[string]string
		docURL  string
	}{
		{"server errors", githubsim.Fault{Status: 502, Times: 2}, []int{502, 502, 200}, nil, ""},
		{"unavailable with retry-after", githubsim.Fault{Status: 503, RetryAfter: 1500 * time.Millisecond, Times: 1}, []int{503, 200},
			map[string]string{"Retry-After": "2"}, ""},
		{"primary 429", githubsim.Fault{Status: 429, RateLimitReset: reset, Times: 1}, []int{429, 200},
			map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}, "#about-rate-limits"},
		{"primary 403", githubsim.Fault{Status: 403, RateLimitReset: reset, Times: 1}, []int{403, 200},
			map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}, "#about-rate-limits"},
		{"secondary 403", githubsim.Fault{Status: 403, Secondary: true, RetryAfter: 3 * time.Second, Times: 1}, []int{403, 200},
			map[string]string{"Retry-After": "3"}, "secondary-rate-limits"},
		{"secondary 429", githubsim.Fault{Status: 429, Secondary: true, RetryAfter: time.Second, Times: 1}, []int{429, 200},
			map[string]string{"Retry-After": "1"}, "secondary-rate-limits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			tok := w.token(t, nil)
			w.s.Inject("GET", "/repos/*/*", tt.fault)
			for i, want := range tt.want {
				resp, body, err := get(t, context.Background(), w, tok)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != want {
					t.Fatalf("call %d: status %d, want %d", i+1, resp.StatusCode, want)
				}
				if want == 200 {
					continue
				}
				for k, v := range tt.headers {
					if got := resp.Header.Get(k); got != v {
						t.Errorf("call %d: %s = %q, want %q", i+1, k, got, v)
					}
				}
				if doc, _ := body["documentation_url"].(string); !strings.HasSuffix(doc, tt.docURL) || body["message"] == "" {
					t.Errorf("call %d: body %v, want documentation_url ending %q", i+1, body, tt.docURL)
				}
			}
		})
	}
}

func TestFaultsAreSeenByGoGitHubAsGitHubs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.s.Inject("GET", "/repos/*/*", githubsim.Fault{Status: 403, Secondary: true, RetryAfter: 2 * time.Second, Times: 1})
	_, _, err := w.client(t, nil, nil).Repositories.Get(ctx, owner, name)
	var abuse *github.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.GetRetryAfter() != 2*time.Second {
		t.Errorf("secondary limit: %v, want AbuseRateLimitError retrying after 2s", err)
	}
	w.s.Inject("GET", "/repos/*/*", githubsim.Fault{Status: 403, RateLimitReset: time.Now().Add(time.Minute), Times: 1})
	_, _, err = w.client(t, nil, nil).Repositories.Get(ctx, owner, name)
	var primary *github.RateLimitError
	if !errors.As(err, &primary) || primary.Rate.Remaining != 0 {
		t.Errorf("primary limit: %v, want RateLimitError", err)
	}
}

func TestFaultMatchesMethodAndPath(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tok := w.token(t, nil)
	w.s.Inject("POST", "/repos/*/*", githubsim.Fault{Status: 500})
	w.s.Inject("GET", "/repos/acme/other", githubsim.Fault{Status: 500})
	for range 3 {
		resp, _, err := get(t, context.Background(), w, tok)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("unmatched fault applied: %v %v", resp.StatusCode, err)
		}
	}
	w.s.Inject("GET", "/repos/acme/widgets", githubsim.Fault{Status: 500})
	w.s.ClearFaults()
	if resp, _, err := get(t, context.Background(), w, tok); err != nil || resp.StatusCode != 200 {
		t.Fatalf("cleared fault applied: %v %v", resp.StatusCode, err)
	}
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tok := w.token(t, nil)
	w.s.Inject("", "/repos/*/*", githubsim.Fault{Latency: time.Hour, Times: 1})
	// Long enough for the request to reach the server even on a loaded
	// machine, so that the fault is spent; far shorter than the latency.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := get(t, ctx, w, tok); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("delayed call: %v, want the caller's deadline to pass first", err)
	}
	if resp, _, err := get(t, context.Background(), w, tok); err != nil || resp.StatusCode != 200 {
		t.Fatalf("call after the delayed one: %v", err)
	}
}

// A fault that strikes after the write is what makes blind retries post
// twice; the simulator must keep the effect.
func TestProcessedFaultKeepsTheEffect(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	n, err := w.s.AddIssue(full, "octocat", "t", "b")
	if err != nil {
		t.Fatal(err)
	}
	w.s.Inject("POST", fmt.Sprintf("/repos/%s/issues/%d/comments", full, n), githubsim.Fault{Status: 502, Processed: true, Times: 1})
	_, resp, err := w.client(t, nil, nil).Issues.CreateComment(context.Background(), owner, name, n, &github.IssueComment{Body: github.String("Queued.")})
	if resp == nil || resp.StatusCode != 502 {
		t.Fatalf("create: %v, want 502", err)
	}
	if got := w.s.Comments(full, n); len(got) != 1 || got[0].Body != "Queued." {
		t.Errorf("comments %+v, want the one that was written", got)
	}
}

// Bad input gets GitHub's answer and changes nothing.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tok := w.token(t, nil)
	n, err := w.s.AddIssue(full, "octocat", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path, body string
		want               int
	}{
		{"POST", fmt.Sprintf("/repos/%s/issues/%d/comments", full, n), "{not json", http.StatusBadRequest},
		{"POST", fmt.Sprintf("/repos/%s/issues/%d/comments", full, n), `{}`, http.StatusUnprocessableEntity},
		{"POST", fmt.Sprintf("/repos/%s/issues/x/comments", full), `{"body":"x"}`, http.StatusNotFound},
		{"POST", "/repos/" + full + "/pulls", `{"head":"main","base":"main"}`, http.StatusUnprocessableEntity},
		{"PATCH", "/repos/" + full + "/issues/comments/1", `{"body":"x"}`, http.StatusNotFound},
		{"GET", "/repos/" + full + "/no-such-route", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, w.s.APIURL()+tt.path, strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "token "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		decodeErr := json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || decodeErr != nil || body["message"] == nil || body["documentation_url"] == nil {
			t.Errorf("%s %s: %d %v (%v), want %d with GitHub's error body", tt.method, tt.path, resp.StatusCode, body, decodeErr, tt.want)
		}
	}
	if cs := w.s.Comments(full, n); len(cs) != 0 {
		t.Errorf("bad requests stored comments: %+v", cs)
	}
	if prs := w.s.PullRequests(full); len(prs) != 0 {
		t.Errorf("bad requests opened pull requests: %+v", prs)
	}
}
