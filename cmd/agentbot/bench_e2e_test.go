package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// benchPolicy's check needs no Go build, so that the figures are the
// pipeline's own rather than the sandbox's compile times.
const benchPolicy = `version: 1
checks:
  - {name: fixed, run: "! grep -q 'i := 1' stats.go"}
paths: {allow: ["**/*.go"]}
`

// BenchmarkFix times the scripted demo task through the whole product,
// with the image and the repository's mirror warm (one task runs first,
// untimed), from the webhook's arrival to its answer, to the first model
// request, to the last, and to the pull request's creation.
//
//	go test ./cmd/agentbot -run '^$' -bench BenchmarkFix -benchtime 3x
func BenchmarkFix(b *testing.B) {
	sample, err := llmtest.Load(filepath.Join(sampleDir, "model.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	var script llmtest.Script
	for range b.N + 1 {
		script.Steps = append(script.Steps, sample.Steps...)
	}
	model, err := llmtest.Start(script)
	if err != nil {
		b.Fatal(err)
	}
	defer model.Close()
	calls := &callClock{}
	proxy := httptest.NewServer(calls.proxy(b, model.URL()))
	defer proxy.Close()
	modelURL, _ := url.Parse(model.URL())

	w := startWorld(b, worldOptions{files: map[string]string{policy.PolicyPath: benchPolicy}},
		map[string]string{"AGENTBOT_LLM_BASE_URL": proxy.URL + modelURL.Path})
	// fix runs one task and returns when, after the webhook was sent, it
	// was answered, admitted (its checkout began), asked the model first
	// and last, and had its pull request.
	fix := func() [5]time.Duration {
		n, err := w.Sim.AddIssue(w.Repo, "grace", fmt.Sprintf("Sum drops the first sample (%d)", len(calls.times())), "as titled")
		if err != nil {
			b.Fatal(err)
		}
		w.Issue = n
		before, prs := len(calls.times()), len(w.Sim.PullRequests(w.Repo))
		start := time.Now()
		_, id, err := w.DeliverComment(b.Context(), demo.Requester, demo.Comment)
		if err != nil {
			b.Fatal(err)
		}
		var at [5]time.Duration
		at[0] = time.Since(start)
		for deadline := start.Add(e2eTimeout); at[4] == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("no pull request")
			}
			if rec, err := w.Store.Task(b.Context(), id); at[1] == 0 && err == nil && rec.State != app.StateQueued {
				at[1] = time.Since(start)
			}
			if len(w.Sim.PullRequests(w.Repo)) > prs {
				at[4] = time.Since(start)
			}
		}
		if rec := waitFinal(b, w, id); rec.State != app.StateSucceeded {
			b.Fatalf("task ended %s (%s)", rec.State, rec.Step)
		}
		times := calls.times()[before:]
		at[2], at[3] = times[0].Sub(start), times[len(times)-1].Sub(start)
		return at
	}
	fix() // warm the mirror, the image's page cache and the connections
	var sum [5]time.Duration
	b.ResetTimer()
	for range b.N {
		for i, d := range fix() {
			sum[i] += d
		}
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(sum[0]), "ms/ack")
	b.ReportMetric(ms(sum[2]), "ms/first-model-request")
	b.ReportMetric(ms(sum[4]), "ms/pr-created")
	b.Logf("per task, after the webhook was sent: answered %.1f ms; admitted %.1f ms (trust, policy, issue, reaction); "+
		"first model request %.1f ms (token, mirror fetch, checkout, sandbox start, prompts); last model request %.1f ms (the loop); "+
		"pull request %.1f ms (checks on finish, gate, commit, push, open)",
		ms(sum[0]), ms(sum[1]), ms(sum[2]), ms(sum[3]), ms(sum[4]))
}

// callClock records when each model request arrives, in front of the
// scripted model.
type callClock struct {
	mu sync.Mutex
	at []time.Time
}

func (c *callClock) proxy(b *testing.B, target string) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	host := &url.URL{Scheme: u.Scheme, Host: u.Host}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(host) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.at = append(c.at, time.Now())
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	})
}

func (c *callClock) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.at)
}
