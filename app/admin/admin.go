// Package admin is the operators' read-only web view of agentbot: the list
// of tasks and, per task, its trace (the timeline of model calls, tool
// calls, checks, refusals and phases, with tokens and cost), rendered on
// the server with html/template, so the pages need no script.
//
// It is served on its own listener (--admin-addr), apart from the
// internet-facing webhook: on loopback by default, and only behind a bearer
// token when bound anywhere else (CheckAddr). Without a token, a request
// must name the configured host or a loopback one in its Host header (421
// Misdirected Request otherwise): a web page whose own name an attacker
// re-points at 127.0.0.1 (DNS rebinding) would else read the pages through
// the operator's browser. It reads through Source,
// which cmd satisfies with the queue's stores; admin imports app only.
package admin

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// Task is a task as the pages show it.
type Task struct {
	app.Task
	State     app.State
	Step      string
	UpdatedAt time.Time
}

// Source is what the pages read.
type Source interface {
	// Tasks returns up to limit tasks, newest first.
	Tasks(ctx context.Context, limit int) ([]Task, error)
	// Task returns one task, or an *app.Error with code app.ENotFound.
	Task(ctx context.Context, id string) (Task, error)
	// Trace returns a task's trace, or an *app.Error with code
	// app.ENotFound when it has none.
	Trace(ctx context.Context, id string) ([]app.TraceEvent, error)
}

// Config is what the handler needs. Token, when set, must come as
// "Authorization: Bearer <token>" on every request. Addr is the address the
// pages are served on (--admin-addr): without a token, the Host of a
// request must be its host or a loopback one.
type Config struct {
	Source Source
	Token  string
	Addr   string
	Logger *slog.Logger
}

// listLimit is how many tasks the list page shows.
const listLimit = 200

// readTimeout bounds what a page reads from Source.
const readTimeout = 5 * time.Second

//go:embed templates/*.tmpl
var templateFS embed.FS

// NewHandler returns the admin pages: "/" (the task list),
// "/tasks/{id}" (a task's trace) and "/tasks/{id}/trace.jsonl" (its
// download).
func NewHandler(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	tmpl := template.Must(template.New("").Funcs(template.FuncMap{
		"ms":      func(d time.Duration) string { return d.Round(time.Millisecond).String() },
		"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
		"when":    func(t time.Time) string { return t.UTC().Format(time.DateTime + " UTC") },
		"dollars": func(f float64) string { return fmt.Sprintf("$%.4f", f) },
	}).ParseFS(templateFS, "templates/*.tmpl"))
	h := &handler{cfg: cfg, tmpl: tmpl}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.list)
	mux.HandleFunc("GET /tasks/{id}", h.trace)
	mux.HandleFunc("GET /tasks/{id}/trace.jsonl", h.download)
	return h.authorize(mux)
}

// CheckAddr refuses to serve the admin pages on addr without a token
// unless addr is a loopback address: the pages name repositories, people
// and commands.
func CheckAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return app.Errorf(app.EInvalid, "--admin-addr %q is not host:port: %v.", addr, err)
	}
	if token != "" {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return app.Errorf(app.EInvalid, "--admin-addr %q is not a loopback address: set an admin token to serve it there.", addr)
}

type handler struct {
	cfg  Config
	tmpl *template.Template
}

func (h *handler) authorize(next http.Handler) http.Handler {
	if h.cfg.Token == "" {
		// A browser sends no token it was not given, but it does send
		// whatever name its page was loaded from: only a name that is
		// this server's own shows the pages.
		configured, _, _ := net.SplitHostPort(h.cfg.Addr)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hostAllowed(r.Host, configured) {
				h.cfg.Logger.Warn("admin request for another host refused", "host", r.Host, "remote", r.RemoteAddr)
				http.Error(w, "This server does not serve that host.", http.StatusMisdirectedRequest)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	want := []byte("Bearer " + h.cfg.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentbot admin"`)
			http.Error(w, "A bearer token is required.", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	tasks, err := h.cfg.Source.Tasks(ctx, listLimit)
	if err != nil {
		h.fail(w, r, "list tasks", err)
		return
	}
	h.render(w, r, "list.tmpl", map[string]any{"Tasks": tasks})
}

func (h *handler) trace(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	id := r.PathValue("id")
	task, err := h.cfg.Source.Task(ctx, id)
	if err != nil {
		h.fail(w, r, "read task "+id, err)
		return
	}
	events, err := h.cfg.Source.Trace(ctx, id)
	if err != nil && app.ErrorCode(err) != app.ENotFound {
		h.fail(w, r, "read trace of task "+id, err)
		return
	}
	h.render(w, r, "trace.tmpl", map[string]any{"Task": task, "Events": events, "Summary": app.SummarizeTrace(events)})
}

func (h *handler) download(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	id := r.PathValue("id")
	events, err := h.cfg.Source.Trace(ctx, id)
	if err != nil {
		h.fail(w, r, "read trace of task "+id, err)
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Content-Disposition", `attachment; filename="trace.jsonl"`)
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			h.cfg.Logger.Warn("write trace download", "task", id, "err", err)
			return
		}
	}
}

func (h *handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		h.fail(w, r, "render "+name, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = io.WriteString(w, b.String())
}

// fail answers 404 for what does not exist and 500, without details, for
// the rest; operators find the chain in the log.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, doing string, err error) {
	if app.ErrorCode(err) == app.ENotFound {
		http.Error(w, app.ErrorMessage(err), http.StatusNotFound)
		return
	}
	h.cfg.Logger.Error("admin page", "path", r.URL.Path, "doing", doing, "err", err)
	http.Error(w, "Internal error.", http.StatusInternalServerError)
}

// hostAllowed reports whether host, a request's Host header, names
// configured (the host of the listening address) or a loopback address,
// whatever the port.
func hostAllowed(host, configured string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return host != "" && strings.EqualFold(host, strings.Trim(configured, "[]"))
}
