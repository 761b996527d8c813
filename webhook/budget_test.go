package webhook_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/webhooktest"
)

// filler is an endless body that costs its sender no memory.
type filler struct{}

func (filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// forged is a well-formed X-Hub-Signature-256 that signs nothing.
var forged = "sha256=" + strings.Repeat("0", 64)

// flood posts n bodies of size bytes at once, signed with signature (none
// when ""); half declare their length and half are chunked. It returns the
// answers' statuses (0: the transport failed, as when the server answers
// before the body is sent and closes) and the peak growth of the heap
// while they were in flight.
func flood(t testing.TB, client *http.Client, url string, n int, size int64, signature string) (statuses map[int]int, retryAfter int, peak uint64) {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	stop, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		var top uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			top = max(top, ms.HeapAlloc)
			select {
			case <-stop:
				sampled <- top
				return
			case <-tick.C:
			}
		}
	}()

	var mu sync.Mutex
	statuses = map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, io.LimitReader(filler{}, size))
			if err != nil {
				t.Error(err)
				return
			}
			if i%2 == 0 {
				req.ContentLength = size
			} // else unknown: sent chunked
			req.Header.Set("X-GitHub-Event", "issue_comment")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprint("flood-", i))
			if signature != "" {
				req.Header.Set("X-Hub-Signature-256", signature)
			}
			status, retry := 0, false
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status, retry = resp.StatusCode, resp.Header.Get("Retry-After") != ""
			}
			mu.Lock()
			defer mu.Unlock()
			statuses[status]++
			if retry {
				retryAfter++
			}
		})
	}
	wg.Wait()
	close(stop)
	top := <-sampled
	return statuses, retryAfter, top - min(top, base)
}

// TestUnsignedFloodKeepsHeapFlat sends 32 forged 25 MiB bodies at once: the
// heap may grow by the bodies in flight the budget allows (64 MiB) and the
// garbage the collector has not yet taken, never by 32 bodies (800 MiB).
// Each is refused, as forged (401) or over the budget (503, Retry-After).
func TestUnsignedFloodKeepsHeapFlat(t *testing.T) {
	in := startIntake(t, nil)
	const limit = 150 << 20
	for _, sig := range []string{forged, ""} {
		statuses, retry, peak := flood(t, in.http, in.url+"/webhook", 32, webhook.MaxBody, sig)
		t.Logf("signature %q: answers %v, %d with Retry-After, heap grew %.1f MiB at its peak", sig, statuses, retry, float64(peak)/(1<<20))
		if peak > limit {
			t.Errorf("signature %q: the heap grew by %d MiB; want under %d MiB", sig, peak>>20, limit>>20)
		}
		for status, n := range statuses {
			switch status {
			case 0, http.StatusUnauthorized, http.StatusServiceUnavailable:
			default:
				t.Errorf("signature %q: %d answers %d; want 401 or 503", sig, n, status)
			}
		}
		if statuses[http.StatusServiceUnavailable] != retry {
			t.Errorf("%d answers 503 but %d carry Retry-After", statuses[http.StatusServiceUnavailable], retry)
		}
		if sig == "" && statuses[http.StatusServiceUnavailable] > 0 {
			t.Errorf("unsigned: %d answers 503; no body without a signature should be read", statuses[http.StatusServiceUnavailable])
		}
	}
	if n := len(in.tasks(t)); n != 0 {
		t.Errorf("%d tasks queued by a flood of forged bodies", n)
	}
}

// BenchmarkUnsignedFlood reports the peak heap growth under 32 concurrent
// forged 25 MiB posts. Run it with -benchtime=1x.
func BenchmarkUnsignedFlood(b *testing.B) {
	in := startIntake(b, nil)
	var peak uint64
	for b.Loop() {
		_, _, p := flood(b, in.http, in.url+"/webhook", 32, webhook.MaxBody, forged)
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// gatedBody is a body that sends its first byte and then waits for open
// to be closed before it ends.
type gatedBody struct {
	sent bool
	open chan struct{}
}

func (g *gatedBody) Read(p []byte) (int, error) {
	if !g.sent {
		g.sent = true
		p[0] = '{'
		return 1, nil
	}
	<-g.open
	return 0, io.EOF
}

// TestBodyBudget holds the whole budget with one slow body: a signed
// delivery that arrives meanwhile is refused at once with 503 and
// Retry-After, and accepted when redelivered after.
func TestBodyBudget(t *testing.T) {
	rs := redistest.Start(t)
	rdb, err := queue.Connect(rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	reg := prometheus.NewRegistry()
	m, err := webhook.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c := queue.NewClient(rdb)
	cfg := webhook.Config{Secrets: [][]byte{secret}, Queue: c, Deliveries: c, Metrics: m,
		Logger: slog.New(slog.DiscardHandler), BodyBudget: webhook.MaxBody}
	h, err := webhook.NewHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(webhook.NewServer(h, c, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	t.Cleanup(srv.Close)

	slow := &gatedBody{open: make(chan struct{})}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/webhook", slow)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = webhook.MaxBody
	req.Header.Set("X-Hub-Signature-256", forged)
	slowDone := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		slowDone <- err
	}()

	payload := webhooktest.IssueComment("/agent fix")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	deadline := time.Now().Add(10 * time.Second)
	delivery := ""
	for i := 0; ; i++ {
		delivery = fmt.Sprint("while-full-", i)
		resp, err := post(ctx, srv.Client(), srv.URL+"/webhook", delivery, payload)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable {
			if resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			break
		}
		// The slow body may not have reached the handler yet.
		if resp.StatusCode != http.StatusAccepted || time.Now().After(deadline) {
			t.Fatalf("with the budget held: %d; want 503", resp.StatusCode)
		}
		payload = webhooktest.IssueComment("/agent fix")
		time.Sleep(20 * time.Millisecond)
	}
	close(slow.open)
	<-slowDone // the short body ends the request: the budget is given back once the server sees it end

	for {
		resp, err := post(ctx, srv.Client(), srv.URL+"/webhook", delivery, payload)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusAccepted {
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("redelivery with the budget free: %d; want 202", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}

	if _, err := webhook.NewHandler(webhook.Config{Secrets: cfg.Secrets, Queue: c, Deliveries: c, Metrics: m,
		BodyBudget: webhook.MaxBody - 1}); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a budget below MaxBody: %v; want an error naming the budget", err)
	}
}

// post delivers a signed payload and returns the answer, its body read.
func post(ctx context.Context, c *http.Client, url, delivery string, payload []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(payload)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-GitHub-Event", "issue_comment")
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", webhook.Sign(secret, payload))
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}
