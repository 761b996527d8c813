package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/webhook/hookshot"
)

func cmdBench(ctx context.Context, args []string, env Env) error {
	const synopsis = "agentbot bench webhook --rate R --duration D --url URL --secret S"
	switch {
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprintln(env.Stdout, "usage: "+synopsis)
		return flag.ErrHelp
	case len(args) == 0 || args[0] != "webhook":
		return &usageError{cmd: "agentbot bench", err: errors.New("name what to measure: bench webhook")}
	}
	fs := newFlagSet("bench webhook", env)
	setSynopsis(fs, synopsis)
	rate := fs.Int("rate", 500, "deliveries per second")
	duration := fs.Duration("duration", 10*time.Second, "how long to send")
	url := fs.String("url", "http://127.0.0.1:8080/webhook", "the webhook endpoint")
	secret := fs.String("secret", "", "the webhook secret the server checks")
	redisURL := fs.String("redis-url", defaultRedisURL, "the server's Redis, to count the queued tasks")
	if err := parseFlags(fs, args[1:], env); err != nil {
		return err
	}
	if *rate <= 0 || *duration <= 0 || *secret == "" {
		return usageErrorf(fs, "--rate and --duration must be positive and --secret set")
	}

	res := benchWebhook(ctx, *url, []byte(*secret), *rate, *duration)
	rdb, err := connectRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	found, err := countTasks(ctx, queue.NewStore(rdb), res.accepted)
	if err != nil {
		return err
	}

	lat := res.latencies
	slices.Sort(lat)
	fmt.Fprintf(env.Stdout, "sent %d signed issue_comment commands at %d/s for %v\n", res.sent, *rate, *duration)
	fmt.Fprintf(env.Stdout, "ack latency: p50 %v  p99 %v  max %v\n", pct(lat, 50), pct(lat, 99), pct(lat, 100))
	fmt.Fprintf(env.Stdout, "accepted %d, errors %d\n", len(res.accepted), res.errors)
	if res.errors > 0 {
		fmt.Fprintf(env.Stdout, "errors by cause: %s\n", res.causes())
	}
	fmt.Fprintf(env.Stdout, "tasks found in Redis: %d of %d accepted (lost %d)\n", found, len(res.accepted), len(res.accepted)-found)
	if res.errors > 0 || found != len(res.accepted) {
		return &exitError{code: 1, err: errors.New("bench webhook: errors or lost tasks")}
	}
	return nil
}

type benchResult struct {
	sent      int
	errors    int
	failures  map[string]int // errors by cause: see failureCause
	accepted  []string       // task ids answered 202
	latencies []time.Duration
}

// failureCause names why a delivery was not accepted, so that a refusal
// (its status and the words of its reason before the first comma: a 503
// for a full budget is not one for an unreachable queue) can be told from
// a client that gave up waiting (timeout) and from a connection that
// failed (conn-error).
func failureCause(r hookshot.Reply, err error) string {
	var nerr net.Error
	status := r.Status
	switch {
	case err == nil:
		reason, _ := r.Body["error"].(string)
		reason, _, _ = strings.Cut(reason, ",")
		return strings.Join(append([]string{"status", strconv.Itoa(status)}, strings.Fields(reason)...), "-")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	case status != 0:
		return fmt.Sprintf("status-%d-unreadable", status)
	}
	return "conn-error"
}

// causes returns the failures as "cause n" pairs in the order of their
// names, for a report.
func (r benchResult) causes() string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(r.failures)) {
		out = append(out, fmt.Sprintf("%s %d", c, r.failures[c]))
	}
	return strings.Join(out, ", ")
}

// benchWebhook sends deliveries at a fixed rate, each on its own schedule
// whatever the answers' latency (an open loop, as GitHub sends), and
// records each answer.
func benchWebhook(ctx context.Context, url string, secret []byte, rate int, duration time.Duration) benchResult {
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 512, MaxIdleConns: 512},
	}
	run := uuid.NewString()
	n := int(duration.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)

	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		res = benchResult{latencies: make([]time.Duration, 0, n), failures: map[string]int{}}
	)
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-ctx.Done():
				wg.Wait()
				return res
			case <-time.After(d):
			}
		}
		res.sent++
		// Each delivery is its own comment, as GitHub's are; the same body
		// twice would be answered as a replay.
		payload := hookshot.IssueComment("/agent fix the flaky test\nSee the CI log above.")
		wg.Go(func() {
			t0 := time.Now()
			r, err := hookshot.Deliver(ctx, client, url, secret, "issue_comment", fmt.Sprintf("%s-%d", run, i), payload)
			lat := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			res.latencies = append(res.latencies, lat)
			id, _ := r.Body["task"].(string)
			if err != nil || r.Status != http.StatusAccepted || id == "" {
				res.errors++
				res.failures[failureCause(r, err)]++
				return
			}
			res.accepted = append(res.accepted, id)
		})
	}
	wg.Wait()
	return res
}

// countTasks returns how many of ids have a record in the store.
func countTasks(ctx context.Context, store *queue.Store, ids []string) (int, error) {
	found := 0
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(ctx, storeTimeout)
		_, err := store.Task(ctx, id)
		cancel()
		switch {
		case err == nil:
			found++
		case app.ErrorCode(err) != app.ENotFound:
			return found, err
		}
	}
	return found, nil
}

// pct returns the p-th percentile of sorted latencies.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(i, 0)]
}
