package webhook_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/hookshot"
	"github.com/agentbot/agentbot/webhook/webhooktest"
)

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
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, io.LimitReader(webhooktest.Filler{}, size))
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
// heap may grow by the bodies in flight the budget allows (64 MiB) and some
// slack, never by 32 bodies (800 MiB), nor by the garbage of bodies read
// one after another. Each is refused, as forged (401), over the budget or
// the address's share of it (503 or 429, Retry-After), or as a body that
// did not arrive within BodyTimeout (408: 32 bodies at once, under -race on
// a loaded machine, may take longer); one without a signature is refused
// unread.
func TestUnsignedFloodKeepsHeapFlat(t *testing.T) {
	in := startIntake(t, nil)
	const limit = webhook.DefaultBodyBudget + 36<<20
	for _, sig := range []string{webhooktest.Forged, ""} {
		statuses, retry, peak := flood(t, in.http, in.url+"/webhook", 32, webhook.MaxBody, sig)
		t.Logf("signature %q: answers %v, %d with Retry-After, heap grew %.1f MiB at its peak", sig, statuses, retry, float64(peak)/(1<<20))
		if peak > limit {
			t.Errorf("signature %q: the heap grew by %d MiB; want under %d MiB", sig, peak>>20, limit>>20)
		}
		for status, n := range statuses {
			switch status {
			case 0, http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusServiceUnavailable:
			default:
				t.Errorf("signature %q: %d answers %d; want 401, 408, 429 or 503", sig, n, status)
			}
		}
		refused := statuses[http.StatusTooManyRequests] + statuses[http.StatusServiceUnavailable]
		if refused != retry {
			t.Errorf("%d answers 429 or 503 but %d carry Retry-After", refused, retry)
		}
		if sig == "" && refused > 0 {
			t.Errorf("unsigned: %d answers 429 or 503; no body without a signature should be read", refused)
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
		_, _, p := flood(b, in.http, in.url+"/webhook", 32, webhook.MaxBody, webhooktest.Forged)
		peak = max(peak, p)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// TestBodyBudget holds half the budget, an address's share, with 25 MiB
// bodies that stop short of their end: a signed 15 MiB delivery from the
// same address that arrives meanwhile is refused at once with 429 and
// Retry-After, and accepted when redelivered after they are gone.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	// Made before the budget is held: the held bodies are given up after
	// BodyTimeout, and making 15 MiB of JSON may take seconds under -race.
	payload := rewrite(t, hookshot.IssueComment("/agent fix"), func(m map[string]any) {
		m["padding"] = strings.Repeat(" ", 15<<20)
	})
	var conns []net.Conn
	for range 2 {
		// The second is refused part way: the address holds its share.
		conn, err := webhooktest.Stall(t.Context(), strings.TrimPrefix(in.url, "http://"), netip.MustParseAddr("127.0.0.1"),
			webhook.MaxBody, webhook.MaxBody-1)
		if err == nil {
			defer conn.Close()
			conns = append(conns, conn)
		}
	}
	if len(conns) == 0 {
		t.Fatal("no body holds the budget")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := post(ctx, in.http, in.url+"/webhook", "while-full", payload)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("with the address's share held: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, c := range conns {
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := post(ctx, in.http, in.url+"/webhook", "while-full", payload)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusAccepted {
			break
		}
		// The server gives the budget back once it sees the bodies end.
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("redelivery with the budget free: %d; want 202", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}

	rdb := redis.NewClient(&redis.Options{Addr: in.redis.Addr})
	defer rdb.Close()
	c := queue.NewClient(rdb)
	m, err := webhook.NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhook.NewHandler(webhook.Config{Secrets: [][]byte{secret}, Queue: c, Deliveries: c, Metrics: m,
		BodyBudget: 2 * webhook.MaxBody}); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a budget below twice MaxBody: %v; want an error naming the budget", err)
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

// TestBodiesAreNotWaitedFor sends bodies that stall: one under headers
// that cannot be a delivery is answered at once and its connection
// closed, without waiting for the body; a delivery's body that stops
// arriving is answered 408 and gives its bytes back.
func TestBodiesAreNotWaitedFor(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	addr := strings.TrimPrefix(in.url, "http://")
	for _, c := range []struct {
		name, headers string
		want          int
	}{
		{"no signature", "X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: d1\r\n", http.StatusUnauthorized},
		{"no delivery id", "X-GitHub-Event: issue_comment\r\nX-Hub-Signature-256: " + webhooktest.Forged + "\r\n", http.StatusBadRequest},
		{"stalled", "X-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: d2\r\nX-Hub-Signature-256: " + webhooktest.Forged + "\r\n", http.StatusRequestTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// Chunked, so that the server would drain it after the answer.
			fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: intake\r\n%sTransfer-Encoding: chunked\r\n\r\n400\r\n%s",
				c.headers, strings.Repeat(" ", 1024))
			// Bounded well past BodyTimeout: a test that waits longer
			// has its answer.
			conn.SetDeadline(time.Now().Add(webhook.BodyTimeout + 20*time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			answer, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.want {
				t.Errorf("answer %d %s; want %d", resp.StatusCode, answer, c.want)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer, the connection gives %v; want it closed (EOF)", err)
			}
		})
	}
}
