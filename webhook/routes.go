package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"
)

// Pinger reports whether the queue's Redis answers, for /readyz.
type Pinger interface {
	Ping(ctx context.Context) error
}

// NewServer returns agentbot's HTTP routes:
//
//	POST /webhook   GitHub deliveries (h)
//	GET  /healthz   the process is alive
//	GET  /readyz    Redis answers (ready)
//	GET  /metrics   Prometheus (metrics)
//	GET  /live/...  tasks' live pages (pages), when not nil
//
// pages comes as a plain handler, so that the intake links nothing of
// what renders them.
func NewServer(h *Handler, ready Pinger, metrics, pages http.Handler) http.Handler {
	r := mux.NewRouter()
	r.Handle("/webhook", h).Methods(http.MethodPost)
	r.HandleFunc("/healthz", handleHealthz).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/readyz", handleReadyz(ready, h.cfg.Timeout)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/metrics", metrics).Methods(http.MethodGet)
	if pages != nil {
		r.PathPrefix("/live/").Handler(pages).Methods(http.MethodGet, http.MethodHead)
	}
	return r
}

func handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func handleReadyz(ready Pinger, timeout time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := ready.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": "redis unreachable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // a client that went away is not ours to report
}
