package webhook_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
)

// TestLivePagesAreServedOnlyWhenGiven: the intake hands GET /live/... to
// the pages it was given, and without them has no such route.
func TestLivePagesAreServedOnlyWhenGiven(t *testing.T) {
	t.Parallel()
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	h, _ := newHandler(t, rdb, nil)
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "page "+r.URL.Path) })
	for _, c := range []struct {
		pages        http.Handler
		method, path string
		want         int
	}{
		{pages, http.MethodGet, "/live/d-1/tok", http.StatusOK},
		{pages, http.MethodPost, "/live/d-1/tok", http.StatusMethodNotAllowed},
		{nil, http.MethodGet, "/live/d-1/tok", http.StatusNotFound},
	} {
		srv := httptest.NewServer(webhook.NewServer(h, queue.NewClient(rdb), http.NotFoundHandler(), c.pages))
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != c.want || (c.want == http.StatusOK) != (string(body) == "page "+c.path) {
			t.Errorf("%s %s with pages %v: %d %q, want %d", c.method, c.path, c.pages != nil, resp.StatusCode, body, c.want)
		}
	}
}
