// Package taskpage is a task's live page: the public, read-only view that
// the status comment links to, with the task's steps as they happen (what
// the model said, each tool call and its result, the checks and their
// output), the diff so far, what it has spent and how it ended. It is
// rendered on the server with html/template; a small script fetches it
// again while the task runs, and without script the page refreshes itself.
//
// The page is reached only through a link whose token is an HMAC of the
// task's id (Signer): a wrong, expired or revoked token, or a task that is
// gone, is the same 404, so the page says nothing of what exists. It shows
// one task and nothing of the server: no configuration, no other task, and
// credentials that reached a text anyway are masked (Redact). It reads
// through Source, which cmd satisfies with the queue's stores; taskpage
// imports app only, and the webhook serves it as a plain http.Handler.
package taskpage

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// Page is what Source knows of a task.
type Page struct {
	Task      app.Task
	State     app.State
	Step      string // the record's step: what it is doing, or why it ended
	UpdatedAt time.Time
	Events    []app.TraceEvent
	// Loops are the agent loops' saved states: one, or one per attempt of
	// limits.attempts; none before the loop starts.
	Loops []Loop
	// Outcome is how the task ended; nil while it runs.
	Outcome *app.TaskOutcome
}

// Loop is what the page shows of one agent loop's saved state.
type Loop struct {
	Attempt int // from 1 under limits.attempts; 0 for a task of one
	// Said is what the model wrote at each step besides its tool calls:
	// Said[0] is step 1's.
	Said   []string
	Checks []Check // the checks the loop ran, in order
	Diff   string  // the work tree's diff against the base
}

// Check is a check the loop ran, with its output.
type Check struct {
	Name     string
	Passed   bool
	ExitCode int
	Output   string
}

// Source reads what a page shows.
type Source interface {
	// Page returns task id's page, or an *app.Error with code
	// app.ENotFound when the task is unknown or expired.
	Page(ctx context.Context, id string) (Page, error)
}

// Config is what the handler needs. Now, when nil, is time.Now.
type Config struct {
	Signer *Signer
	Source Source
	Logger *slog.Logger
	Now    func() time.Time
}

// Bounds of what one page shows of a text: the trace keeps
// app.MaxTraceField of each, the saved state more.
const (
	maxSaid   = 4000
	maxArgs   = 1500
	maxResult = 3000
	maxOutput = 4000
	maxDiff   = 60000
)

// refreshSeconds is how often the page is fetched again while the task
// runs: by the script, or by the browser without it.
const refreshSeconds = 3

// readTimeout bounds what a page reads from Source.
const readTimeout = 5 * time.Second

//go:embed templates/*.tmpl assets/*
var files embed.FS

// assets are the page's script and style, served from the same origin so
// that the page's Content-Security-Policy allows no inline code.
var assets = map[string]string{"page.js": "text/javascript; charset=utf-8", "page.css": "text/css; charset=utf-8"}

// securityHeaders keep the page's link, which is its credential, out of
// Referer headers, caches and search engines, and the page out of frames.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	"Referrer-Policy":        "no-referrer",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"X-Robots-Tag":           "noindex, nofollow",
	"Cache-Control":          "no-store",
}

// NewHandler returns the pages, under Prefix: GET {task}/{token}, and the
// page's assets.
func NewHandler(cfg Config) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &handler{cfg: cfg, tmpl: template.Must(template.New("").Funcs(funcs).ParseFS(files, "templates/*.tmpl"))}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"{id}/{token}", h.page)
	for name, typ := range assets {
		body, err := files.ReadFile("assets/" + name)
		if err != nil {
			panic(err) // embedded above: a build without them does not exist
		}
		mux.HandleFunc("GET "+Prefix+name, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", typ)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Cache-Control", "public, max-age=300")
			_, _ = w.Write(body)
		})
	}
	mux.HandleFunc(Prefix, notFound)
	return mux
}

type handler struct {
	cfg  Config
	tmpl *template.Template
}

// notFound is the one answer for what the caller may not see, whatever
// the reason.
func notFound(w http.ResponseWriter, _ *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	http.Error(w, "Not found.", http.StatusNotFound)
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !h.cfg.Signer.Valid(id, r.PathValue("token"), h.cfg.Now()) {
		notFound(w, r)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	p, err := h.cfg.Source.Page(ctx, id)
	if app.ErrorCode(err) == app.ENotFound {
		notFound(w, r)
		return
	}
	if err != nil {
		h.cfg.Logger.Error("task page", "task", id, "err", err)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	v := newView(p, h.cfg.Signer.secret)
	for k, val := range securityHeaders {
		w.Header().Set(k, val)
	}
	etag := `"` + v.Version + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	var b strings.Builder
	if err := h.tmpl.ExecuteTemplate(&b, "page.tmpl", v); err != nil {
		h.cfg.Logger.Error("render task page", "task", id, "err", err)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// view is a Page as the template shows it: texts cut and masked, each
// model call with its words and each check with its output.
type view struct {
	Task      app.Task
	State     app.State
	Step      string
	Final     bool
	UpdatedAt time.Time
	Summary   app.TraceSummary
	Events    []event
	Diffs     []diff
	Outcome   *app.TaskOutcome
	Refresh   int
	Version   string // changes whenever what the page shows does
}

type event struct {
	app.TraceEvent
	Said   string // a model call: what the model wrote
	Output string // a check the loop ran: its output
}

type diff struct {
	Attempt int
	Text    string
}

func newView(p Page, secret []byte) view {
	mask := func(s string, n int) string { return cut(Redact(s, secret), n) }
	v := view{Task: p.Task, State: p.State, Step: mask(p.Step, app.MaxTraceLabel), Final: p.State.Final(),
		UpdatedAt: p.UpdatedAt, Summary: app.SummarizeTrace(p.Events), Outcome: p.Outcome, Refresh: refreshSeconds}
	v.Task.Instructions = mask(v.Task.Instructions, maxSaid)
	loops := map[int]Loop{}
	for _, l := range p.Loops {
		loops[l.Attempt] = l
		if l.Diff != "" {
			v.Diffs = append(v.Diffs, diff{Attempt: l.Attempt, Text: mask(l.Diff, maxDiff)})
		}
	}
	said := map[[2]int]bool{}
	checks := map[int]int{} // the next of each loop's checks to match
	for _, e := range p.Events {
		ev := event{TraceEvent: e}
		ev.Name, ev.Outcome = mask(e.Name, app.MaxTraceLabel), mask(e.Outcome, app.MaxTraceLabel)
		ev.Args, ev.Result, ev.Detail = mask(e.Args, maxArgs), mask(e.Result, maxResult), mask(e.Detail, maxArgs)
		l := loops[e.Attempt]
		switch key := [2]int{e.Attempt, e.Step}; {
		case e.Kind == app.TraceModelCall && e.Outcome == "ok" && e.Step > 0 && e.Step <= len(l.Said) && !said[key]:
			said[key] = true
			ev.Said = mask(l.Said[e.Step-1], maxSaid)
		case e.Kind == app.TraceCheck && e.Step > 0:
			// The loop's checks are traced in the order it ran them.
			if i := checks[e.Attempt]; i < len(l.Checks) && l.Checks[i].Name == e.Name {
				ev.Output = mask(tailCut(l.Checks[i].Output, maxOutput), maxOutput)
				checks[e.Attempt] = i + 1
			}
		}
		v.Events = append(v.Events, ev)
	}
	raw, _ := json.Marshal(struct {
		P Page
		S string
	}{p, v.Step}) // a Page always encodes
	sum := sha256.Sum256(raw)
	v.Version = hex.EncodeToString(sum[:12])
	return v
}

var funcs = template.FuncMap{
	"ms":      func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"clock":   func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"when":    func(t time.Time) string { return t.UTC().Format(time.DateTime + " UTC") },
	"dollars": func(f float64) string { return fmt.Sprintf("$%.4f", f) },
}

// cut returns s when it fits in n bytes, or its head and tail with a note
// of how much was left out between them.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head := validPrefix(s, n*2/3)
	tail := validSuffix(s, n-len(head))
	return fmt.Sprintf("%s\n… %d bytes not shown …\n%s", head, len(s)-len(head)-len(tail), tail)
}

// tailCut keeps the last n bytes of a check's output, where failures are.
func tailCut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := validSuffix(s, n-40)
	return fmt.Sprintf("… %d bytes not shown …\n%s", len(s)-len(t), t)
}

func validPrefix(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:min(n, len(s))]
}

func validSuffix(s string, n int) string {
	i := max(len(s)-n, 0)
	for i < len(s) && s[i]&0xC0 == 0x80 {
		i++
	}
	return s[i:]
}
