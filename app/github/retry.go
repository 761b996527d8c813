package github

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy bounds how the GitHub transport retries. Zero fields take
// their defaults.
type RetryPolicy struct {
	// Attempts is the most requests sent for one call, the first included
	// (default 4).
	Attempts int
	// BaseDelay is the first back-off after a 5xx without Retry-After; it
	// doubles on each attempt, with jitter, up to MaxDelay (default 500ms).
	BaseDelay time.Duration
	// MaxDelay is the longest wait agentbot accepts (default one minute). A
	// rate limit that asks for longer is returned to the caller at once
	// rather than stalling a worker: the task fails with a clear error and
	// can be retried.
	MaxDelay time.Duration
	// Sleep waits for d or until ctx is done; tests replace it to record the
	// waits instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 4
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 500 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = time.Minute
	}
	if p.Sleep == nil {
		p.Sleep = sleepCtx
	}
	return p
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryTransport retries what GitHub asks to be retried: rate limits,
// primary and secondary (see delay), and server errors. A rate-limited request was not
// processed, so any method is replayed; a 5xx on a POST may have created
// something, so it is replayed only where the POST is idempotent (see
// idempotent) and otherwise left to the caller, whose creates look before
// they post.
type retryTransport struct {
	next   http.RoundTripper
	policy RetryPolicy
	now    func() time.Time
}

func newRetryTransport(next http.RoundTripper, p RetryPolicy) *retryTransport {
	return &retryTransport{next: next, policy: p.withDefaults(), now: time.Now}
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 1; ; attempt++ {
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		resp, err := t.next.RoundTrip(req)
		if err != nil || !replayable || attempt >= t.policy.Attempts {
			return resp, err
		}
		wait, retry := t.delay(req, resp, attempt)
		if !retry {
			return resp, nil
		}
		// Drain so the connection is reused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if err := t.policy.Sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// delay says whether resp is worth another attempt and how long to wait
// first. Rate limits are handled as GitHub documents: wait for Retry-After
// when it is given; else, when x-ratelimit-remaining is 0, until
// x-ratelimit-reset; else at least a minute.
func (t *retryTransport) delay(req *http.Request, resp *http.Response, attempt int) (time.Duration, bool) {
	h := resp.Header
	retryAfter, hasRetryAfter := parseRetryAfter(h.Get("Retry-After"), t.now())
	exhausted := h.Get("X-Ratelimit-Remaining") == "0"
	limited := resp.StatusCode == http.StatusTooManyRequests ||
		resp.StatusCode == http.StatusForbidden && (hasRetryAfter || exhausted || saysRateLimit(resp))
	var wait time.Duration
	switch {
	case limited && hasRetryAfter:
		wait = retryAfter
	case limited && exhausted:
		wait = time.Minute
		if reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			wait = max(time.Unix(reset, 0).Sub(t.now()), 0)
		}
	case limited:
		wait = time.Minute
	case resp.StatusCode >= 500 && idempotent(req):
		wait = t.policy.backoff(attempt)
		if hasRetryAfter {
			wait = retryAfter
		}
	default:
		return 0, false
	}
	if wait > t.policy.MaxDelay {
		return 0, false
	}
	if dl, ok := req.Context().Deadline(); ok && t.now().Add(wait).After(dl) {
		return 0, false
	}
	return wait, true
}

// saysRateLimit reports whether a 403 without rate-limit headers is one all
// the same: GitHub then says so only in the message ("You have exceeded a
// secondary rate limit"). The body stays readable for the caller.
func saysRateLimit(resp *http.Response) bool {
	head, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	return err == nil && bytes.Contains(bytes.ToLower(head), []byte("rate limit"))
}

// backoff is the wait before attempt+1 when GitHub named none: BaseDelay
// doubling per attempt, plus up to half again of jitter so that workers
// that failed together do not retry together, at most MaxDelay.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseDelay << (attempt - 1)
	d += rand.N(d/2 + 1)
	return min(d, p.MaxDelay)
}

// parseRetryAfter reads Retry-After as seconds or as an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// idempotent reports whether replaying req after a server error cannot make
// GitHub do something twice. Among POSTs, those that add to a set (a
// user's reaction, labels, requested reviewers), mint a token or write a
// Git object (content-addressed blobs and trees; a commit no ref points
// at yet) are.
func idempotent(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return true
	}
	for _, suffix := range []string{"/reactions", "/labels", "/requested_reviewers", "/access_tokens", "/git/blobs", "/git/trees", "/git/commits"} {
		if strings.HasSuffix(req.URL.Path, suffix) {
			return true
		}
	}
	return false
}
