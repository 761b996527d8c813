package github

import (
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
)

// Fault is a failure Inject makes matching requests suffer.
type Fault struct {
	// Status is the answer instead of the real one; 0 only delays.
	// 429, or 403 with Secondary or RateLimitReset set, is a rate limit
	// answered with GitHub's headers and body.
	Status int
	// RetryAfter sets Retry-After (whole seconds, rounded up).
	RetryAfter time.Duration
	// RateLimitReset is when a primary rate limit resets
	// (x-ratelimit-reset); default a minute from now.
	RateLimitReset time.Time
	// Secondary makes a rate limit a secondary one.
	Secondary bool
	// Times is how many matching requests fail; 0 means all of them.
	Times int
	// Latency is added before answering.
	Latency time.Duration
	// Processed lets the request take effect before the fault is
	// answered, as when GitHub times out after writing: a client that
	// retries blindly then creates twice.
	Processed bool
}

type fault struct {
	method, pattern string
	Fault
	left int // -1: unlimited
}

// Inject makes the next requests matching method ("" for any) and
// pathPattern suffer f. The pattern is matched with path.Match against the
// path without the /api/v3 prefix, e.g. "/repos/*/*/issues/*/comments",
// or against /OWNER/REPO.git/... for git. Faults apply in the order they
// were injected; a spent one is dropped.
func (s *Server) Inject(method, pathPattern string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := f.Times
	if left <= 0 {
		left = -1
	}
	s.faults = append(s.faults, &fault{method: strings.ToUpper(method), pattern: pathPattern, Fault: f, left: left})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFault returns the fault the request suffers, spending one use.
func (s *Server) takeFault(r *http.Request) (Fault, bool) {
	p := strings.TrimPrefix(r.URL.Path, "/api/v3")
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.method != "" && f.method != r.Method {
			continue
		}
		if ok, _ := path.Match(f.pattern, p); !ok {
			continue
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		return f.Fault, true
	}
	return Fault{}, false
}

func (s *Server) withFaults(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := s.takeFault(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if f.Latency > 0 {
			select {
			case <-time.After(f.Latency):
			case <-r.Context().Done():
				return
			}
		}
		if f.Status == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if f.Processed {
			next.ServeHTTP(discard{}, r)
		}
		s.writeFault(w, f)
	})
}

// writeFault answers as GitHub does when it fails or limits a client.
func (s *Server) writeFault(w http.ResponseWriter, f Fault) {
	h := w.Header()
	h.Set("X-GitHub-Request-Id", requestID())
	if f.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(f.RetryAfter.Seconds()))))
	}
	rateLimited := f.Status == http.StatusTooManyRequests ||
		(f.Status == http.StatusForbidden && (f.Secondary || !f.RateLimitReset.IsZero()))
	switch {
	case rateLimited && f.Secondary:
		writeJSON(w, f.Status, obj{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID " + h.Get("X-GitHub-Request-Id") + ".",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
	case rateLimited:
		reset := f.RateLimitReset
		if reset.IsZero() {
			reset = time.Now().Add(time.Minute)
		}
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", "5000")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
		writeJSON(w, f.Status, obj{
			"message":           "API rate limit exceeded for installation. If you reach out to GitHub Support for help, please include the request ID " + h.Get("X-GitHub-Request-Id") + ".",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-rate-limits",
		})
	default:
		writeJSON(w, f.Status, obj{"message": http.StatusText(f.Status), "documentation_url": docsURL, "status": fmt.Sprint(f.Status)})
	}
}

// discard is a ResponseWriter that drops the answer of a request whose
// effect is kept but whose answer a fault replaces.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
