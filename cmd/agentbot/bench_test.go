package main

import (
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestBenchWebhookCountsFailuresByCause sends to an endpoint that answers
// some deliveries 503 with a reason and never answers others, and to an
// address where nothing listens: each failure is counted under its cause.
func TestBenchWebhookCountsFailuresByCause(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	unblock := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			<-unblock // past the client's timeout
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error": "queue unavailable, redeliver later"}`))
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(unblock) })
	res := benchWebhook(t.Context(), srv.URL, []byte("s"), 4, time.Second)
	want := map[string]int{"status-503-queue-unavailable": 2, "timeout": 2}
	if !maps.Equal(res.failures, want) || res.errors != 4 {
		t.Errorf("failures %v (errors %d); want %v", res.failures, res.errors, want)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + l.Addr().String()
	l.Close()
	res = benchWebhook(t.Context(), gone, []byte("s"), 2, time.Second)
	if got := slices.Collect(maps.Keys(res.failures)); !slices.Equal(got, []string{"conn-error"}) || res.failures["conn-error"] != 2 {
		t.Errorf("nothing listening: failures %v; want conn-error 2", res.failures)
	}
	if got := res.causes(); got != "conn-error 2" {
		t.Errorf("causes() = %q; want %q", got, "conn-error 2")
	}
}
