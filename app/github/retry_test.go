package github

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// scripted answers each request with the next of its replies (the last one
// repeats) and records the bodies it received.
type scripted struct {
	mu      sync.Mutex
	replies []func(w http.ResponseWriter)
	bodies  []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(b))
	reply := s.replies[min(n, len(s.replies)-1)]
	s.mu.Unlock()
	reply(w)
}

const scriptedBody = `{"message":"scripted"}`

func status(code int, headers ...string) func(http.ResponseWriter) {
	return answer(code, scriptedBody, headers...)
}

func answer(code int, body string, headers ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

const secondaryLimitBody = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`

func TestRetryTransport(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	reset := strconv.FormatInt(now.Unix()+42, 10)
	ok := status(200)
	tests := []struct {
		name     string
		method   string
		path     string
		replies  []func(http.ResponseWriter)
		requests int
		waits    []time.Duration
		final    int
	}{
		{"secondary limit 429 honours Retry-After", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(429, "Retry-After", "7"), ok}, 2, []time.Duration{7 * time.Second}, 200},
		{"secondary limit 403 honours Retry-After", "POST", "/repos/o/r/issues/1/comments",
			[]func(http.ResponseWriter){status(403, "Retry-After", "3"), ok}, 2, []time.Duration{3 * time.Second}, 200},
		{"primary limit waits for the reset", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(403, "X-Ratelimit-Remaining", "0", "X-Ratelimit-Reset", reset), ok}, 2, []time.Duration{42 * time.Second}, 200},
		{"429 without headers waits a minute", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(429), ok}, 2, []time.Duration{time.Minute}, 200},
		{"403 that says secondary rate limit waits a minute", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){answer(403, secondaryLimitBody), ok}, 2, []time.Duration{time.Minute}, 200},
		{"exhausted without a reset waits a minute", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(403, "X-Ratelimit-Remaining", "0"), ok}, 2, []time.Duration{time.Minute}, 200},
		{"5xx on GET is retried", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(502), status(503), ok}, 3, nil, 200},
		{"5xx with Retry-After honours it", "PATCH", "/repos/o/r/issues/comments/1",
			[]func(http.ResponseWriter){status(503, "Retry-After", "2"), ok}, 2, []time.Duration{2 * time.Second}, 200},
		{"5xx on a create is not replayed", "POST", "/repos/o/r/issues/1/comments",
			[]func(http.ResponseWriter){status(500), ok}, 1, []time.Duration{}, 500},
		{"5xx on a reaction is replayed", "POST", "/repos/o/r/issues/comments/1/reactions",
			[]func(http.ResponseWriter){status(500), ok}, 2, nil, 200},
		{"5xx on a Git object is replayed", "POST", "/repos/o/r/git/trees",
			[]func(http.ResponseWriter){status(502), ok}, 2, nil, 200},
		{"5xx on creating a ref is not replayed", "POST", "/repos/o/r/git/refs",
			[]func(http.ResponseWriter){status(500), ok}, 1, []time.Duration{}, 500},
		{"plain 403 is final", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){answer(403, `{"message":"Resource not accessible by integration"}`), ok}, 1, []time.Duration{}, 403},
		{"a final rate limit keeps its body", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){answer(403, secondaryLimitBody)}, 4, nil, 403},
		{"404 is final", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(404), ok}, 1, []time.Duration{}, 404},
		{"a wait above MaxDelay is not taken", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(429, "Retry-After", "3600"), ok}, 1, []time.Duration{}, 429},
		{"attempts are bounded", "GET", "/repos/o/r",
			[]func(http.ResponseWriter){status(503)}, 4, nil, 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &scripted{replies: tc.replies}
			srv := httptest.NewServer(s)
			defer srv.Close()
			var waits []time.Duration
			rt := newRetryTransport(http.DefaultTransport, RetryPolicy{
				Attempts: 4,
				MaxDelay: time.Minute,
				Sleep: func(_ context.Context, d time.Duration) error {
					waits = append(waits, d)
					return nil
				},
			})
			rt.now = func() time.Time { return now }
			const body = `{"body":"hello"}`
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !json.Valid(got) || !bytes.HasPrefix(got, []byte(`{"message":`)) {
				t.Errorf("final body %q, %v: not what GitHub sent", got, err)
			}
			if resp.StatusCode != tc.final {
				t.Errorf("final status %d, want %d", resp.StatusCode, tc.final)
			}
			if len(s.bodies) != tc.requests {
				t.Errorf("%d requests, want %d", len(s.bodies), tc.requests)
			}
			for i, b := range s.bodies {
				if b != body {
					t.Errorf("request %d carried body %q, want %q", i+1, b, body)
				}
			}
			if tc.waits != nil && !slices.Equal(waits, tc.waits) {
				t.Errorf("waited %v, want %v", waits, tc.waits)
			}
			if len(waits) != len(s.bodies)-1 {
				t.Errorf("%d waits for %d requests", len(waits), len(s.bodies))
			}
		})
	}
}

func TestRetryTransportStopsWhenTheContextEnds(t *testing.T) {
	t.Parallel()
	s := &scripted{replies: []func(http.ResponseWriter){status(429, "Retry-After", "5"), status(200)}}
	srv := httptest.NewServer(s)
	defer srv.Close()
	rt := newRetryTransport(http.DefaultTransport, RetryPolicy{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// A 5 s wait does not fit in the 1 s deadline: the 429 is the answer.
	if resp.StatusCode != 429 || len(s.bodies) != 1 {
		t.Errorf("status %d after %d requests, want 429 after 1", resp.StatusCode, len(s.bodies))
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"60", time.Minute, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
		{"-5", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseRetryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
