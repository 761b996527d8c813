// Package webhook is agentbot's HTTP intake: it receives GitHub's webhook
// deliveries, turns the commands in them into app.Tasks, queues those
// durably and answers within milliseconds.
//
// A delivery goes through, in order: a well-formed X-Hub-Signature-256
// header (401 before a byte of the body is read), the X-GitHub-Event and
// X-GitHub-Delivery headers (400, also unread), a 25 MiB body cap (413),
// the budget of body bytes held by all deliveries in flight together (503
// with Retry-After) and the share of it the sender's address may hold
// (429 with Retry-After, body.go), a body complete within BodyTimeout
// (408), the signature check against every configured secret
// as the body streams in (401), parsing (400 with a short reason), the
// filter that finds a command or the reason there is none, for a command
// the body de-duplication (the same signed body under a new delivery id is
// a replay: 200 {"duplicate": true}) and the enqueue (202 {"task": id}),
// and the delivery de-duplication (200 {"duplicate": true}); otherwise 200
// {"ignored": reason}. So what is not signed costs at most its share of the
// budget, never memory in proportion to how many send it. A merged pull request, or a push that reverts commits, is queued
// the same way as an outcome event (202 {"event": id}) for the worker that
// records what became of the agent's pull requests. A pull request opened,
// reopened, marked ready for review or pushed to is queued as a review of
// its head, one per head (autoreview.go), which the worker runs when the
// default branch's policy asks for it. A check_run,
// check_suite or workflow_run that completed with a failure on a pull
// request's head is queued as a fix-ci task (ci.go), and a review that
// requests changes, or whose body is a fix command, as one follow-up
// for all its inline comments (review.go). The delivery is
// remembered last, once its task or event is queued; what is ignored costs
// one Redis round trip. Nothing happens after the answer, so a restart
// loses nothing; when Redis cannot be reached the answer is 503 and GitHub
// shows the delivery as failed, ready to be redelivered.
//
// The package declares the two small interfaces it needs, Enqueuer and
// Deduplicator, which the queue package satisfies; it makes no GitHub API
// call and links no Docker client, and a test keeps it so. All routes are in
// routes.go.
package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/agentbot/agentbot/app"
	"golang.org/x/time/rate"
)

// MaxBody is the largest delivery accepted; GitHub caps payloads at 25 MiB.
const MaxBody = 25 << 20

// BodyTimeout bounds the time a delivery's body may take to arrive, from
// the handler's start; GitHub itself gives up on a delivery after ten
// seconds. A body not read to its end is answered 408.
const BodyTimeout = 10 * time.Second

// DefaultTimeout bounds the Redis work of one delivery, so that the answer
// comes within two seconds even when Redis does not.
const DefaultTimeout = 1500 * time.Millisecond

// Enqueuer durably queues a task, or an outcome event for the worker that
// records merges and reverts. Each reports duplicate, without queueing,
// when the delivery was already marked by the Deduplicator (tasks) or one
// with the same ID is already queued.
type Enqueuer interface {
	Enqueue(ctx context.Context, t app.Task) (duplicate bool, err error)
	EnqueueEvent(ctx context.Context, e app.OutcomeEvent) (duplicate bool, err error)
}

// Deduplicator remembers the deliveries already answered. MarkSeen reports
// whether the delivery was already marked; for a command it is called only
// after the task is queued, so a failed enqueue leaves the delivery free to
// be redelivered. ClaimBody remembers which delivery first carried the body
// with the SHA-256 digest (hex) and returns that delivery: another id than
// the caller's means the signed body is being replayed.
type Deduplicator interface {
	MarkSeen(ctx context.Context, delivery string) (already bool, err error)
	ClaimBody(ctx context.Context, digest, delivery string) (first string, err error)
}

// Config is what a Handler needs.
type Config struct {
	Secrets    [][]byte // webhook secrets; any of them signs a valid delivery
	Queue      Enqueuer
	Deliveries Deduplicator
	Metrics    *Metrics
	Logger     *slog.Logger  // slog.Default() when nil
	Command    string        // the command word; app.DefaultCommand when empty
	Timeout    time.Duration // DefaultTimeout when 0
	// BodyBudget bounds the bytes of request bodies held at once by all
	// deliveries in flight; DefaultBodyBudget when 0. It must hold the
	// largest payload twice, since one sender's address may hold at most
	// half of it, or that payload could never be accepted.
	BodyBudget int64
}

// Handler answers POST /webhook.
type Handler struct {
	cfg    Config
	budget *byteBudget
	// refusedLog bounds the log lines of refused deliveries, which anyone
	// can send in any number; unlogged counts those it held back, which
	// the next line says. The metrics count every one.
	refusedLog *rate.Limiter
	unlogged   atomic.Int64
}

// Refused deliveries are logged at most refusedPerSecond a second, after a
// burst of refusedBurst.
const (
	refusedPerSecond = 10
	refusedBurst     = 20
)

// NewHandler checks cfg and returns a Handler. It refuses to build one
// without a secret: an unsigned webhook would let anyone start the agent.
func NewHandler(cfg Config) (*Handler, error) {
	if len(cfg.Secrets) == 0 {
		return nil, errors.New("webhook: no webhook secret configured")
	}
	for _, s := range cfg.Secrets {
		if len(s) == 0 {
			return nil, errors.New("webhook: empty webhook secret")
		}
	}
	if cfg.Queue == nil || cfg.Deliveries == nil || cfg.Metrics == nil {
		return nil, errors.New("webhook: Queue, Deliveries and Metrics are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Command == "" {
		cfg.Command = app.DefaultCommand
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.BodyBudget == 0 {
		cfg.BodyBudget = DefaultBodyBudget
	}
	// One peer holds at most half of the budget, and its largest payload
	// must fit in that half.
	if least := int64(2 * (MaxBody + chunkSize)); cfg.BodyBudget < least {
		return nil, fmt.Errorf("webhook: body budget %d bytes is below the %d the largest payload needs", cfg.BodyBudget, least)
	}
	held := func(delta int64) { cfg.Metrics.bodyBytes.Add(float64(delta)) }
	return &Handler{cfg: cfg, budget: newByteBudget(cfg.BodyBudget, held), refusedLog: rate.NewLimiter(refusedPerSecond, refusedBurst)}, nil
}

// TaskID returns the ID of the task made from delivery: the same delivery,
// redelivered, maps to the same task.
func TaskID(delivery string) string {
	sum := sha256.Sum256([]byte(delivery))
	return hex.EncodeToString(sum[:8])
}

// answer is how one delivery was answered, for the response, the log and
// the metrics.
type answer struct {
	status  int
	outcome string // the metrics label
	body    map[string]any
	reason  string            // why it was refused or ignored, for the log too
	repo    string            // owner/name, once the payload is read
	task    app.Task          // set when a command was found
	event   *app.OutcomeEvent // set when a merge or revert was found
	err     error             // why it failed, for the operator's log
	retry   bool              // answer with Retry-After: the refusal is momentary
}

func fail(status int, outcome, reason string, err error) answer {
	return answer{status: status, outcome: outcome, reason: reason, body: map[string]any{"error": reason}, err: err}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	event, delivery := r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery")
	in := &body{budget: h.budget, peer: peerOf(r.RemoteAddr)}
	a := h.handle(w, r, in, event, delivery)
	if !in.ended {
		// The rest of a body is not waited for: the server would read up
		// to 256 KiB of it after the answer, for as long as its sender
		// stalls, before it lets the connection go.
		w.Header().Set("Connection", "close")
		if err := setReadDeadline(w, time.Now()); err != nil {
			h.cfg.Logger.Warn("webhook: cannot stop reading the body", "err", err)
		}
	}

	if a.retry {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, a.status, a.body)
	elapsed := time.Since(start)

	label := eventLabel(event)
	h.cfg.Metrics.requests.WithLabelValues(label, a.outcome).Inc()
	h.cfg.Metrics.ack.Observe(elapsed.Seconds())
	attrs := []any{"delivery", delivery, "event", label, "outcome", a.outcome,
		"status", a.status, "ms", float64(elapsed.Microseconds()) / 1000}
	if a.repo != "" {
		attrs = append(attrs, "repo", a.repo)
	}
	if a.task.ID != "" {
		attrs = append(attrs, "task", a.task.ID, "verb", a.task.Verb)
	}
	if a.event != nil {
		attrs = append(attrs, "outcome_event", a.event.ID)
	}
	if a.reason != "" {
		attrs = append(attrs, "reason", a.reason)
	}
	if a.status >= http.StatusBadRequest && !h.refusedLog.Allow() {
		h.unlogged.Add(1)
		return
	}
	if n := h.unlogged.Swap(0); n > 0 {
		attrs = append(attrs, "refusals_unlogged", n)
	}
	if a.err != nil {
		h.cfg.Logger.Warn("webhook refused", append(attrs, "err", a.err)...)
		return
	}
	h.cfg.Logger.Info("webhook", attrs...)
}

func (h *Handler) handle(w http.ResponseWriter, r *http.Request, in *body, event, delivery string) answer {
	unauthorized := fail(http.StatusUnauthorized, "unauthorized", "missing or invalid X-Hub-Signature-256",
		errors.New("signature check failed"))
	v, ok := newVerifier(h.cfg.Secrets, r.Header.Get("X-Hub-Signature-256"))
	if !ok {
		return unauthorized // no body can satisfy it: none is read
	}
	if event == "" || delivery == "" || len(delivery) > 128 {
		return fail(http.StatusBadRequest, "invalid", "X-GitHub-Event and X-GitHub-Delivery are required", nil)
	}
	tooLarge := fail(http.StatusRequestEntityTooLarge, "too_large", "payload larger than 25 MiB", nil)
	if r.ContentLength > MaxBody {
		tooLarge.err = fmt.Errorf("Content-Length %d", r.ContentLength)
		return tooLarge
	}
	// GitHub gives up on a delivery after ten seconds: a body still
	// arriving after that is no use to anyone but a sender holding the
	// budget.
	if err := setReadDeadline(w, time.Now().Add(BodyTimeout)); err != nil {
		return fail(http.StatusInternalServerError, "error", "cannot bound the body's read", err)
	}
	digest := sha256.New()
	// Its pieces, and the copy of an authentic body, are given back to the
	// budget once the delivery is answered.
	defer in.release()
	err := in.readFrom(http.MaxBytesReader(w, r.Body, MaxBody), io.MultiWriter(v, digest))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		tooLarge.err = err
		return tooLarge
	}
	switch {
	case errors.Is(err, errBusy):
		busy := fail(http.StatusServiceUnavailable, "busy", "too many deliveries in flight, redeliver later", err)
		busy.retry = true
		return busy
	case errors.Is(err, errPeerShare):
		throttled := fail(http.StatusTooManyRequests, "throttled", "too many deliveries in flight from this address, redeliver later", err)
		throttled.retry = true
		return throttled
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fail(http.StatusRequestTimeout, "timeout", "the body did not arrive in time", err)
	case err != nil:
		return fail(http.StatusBadRequest, "invalid", "cannot read the body", err)
	}
	if !v.valid() {
		return unauthorized
	}
	payload := in.bytes()

	var a answer
	if isOutcomeEvent(event) {
		a = h.interpretOutcome(event, delivery, payload)
	} else {
		a = h.interpret(event, delivery, payload)
	}
	if a.status == http.StatusBadRequest {
		return a
	}

	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	unavailable := func(err error) answer {
		return fail(http.StatusServiceUnavailable, "unavailable", "queue unavailable, redeliver later", err)
	}
	duplicate := answer{status: http.StatusOK, outcome: "duplicate", repo: a.repo, body: map[string]any{"duplicate": true}}
	if a.status == http.StatusAccepted {
		// The signature covers the body, not the delivery id: the same
		// signed body under a new id is a replay, never a new command.
		first, err := h.cfg.Deliveries.ClaimBody(ctx, hex.EncodeToString(digest.Sum(nil)), delivery)
		if err != nil {
			return unavailable(err)
		}
		if first != delivery {
			duplicate.reason = "replays the body of delivery " + first
			return duplicate
		}
		dup, err := h.enqueue(ctx, a)
		if err != nil {
			return unavailable(err)
		}
		if dup {
			maps.Copy(duplicate.body, a.body) // the task's or the event's id
			duplicate.task, duplicate.event = a.task, a.event
			a = duplicate
		}
	}
	// Remembering the delivery is the last step, and for what is ignored
	// the only one.
	already, err := h.cfg.Deliveries.MarkSeen(ctx, delivery)
	if err != nil {
		// A queued task is not lost: the redelivery GitHub will make finds
		// it and answers "duplicate".
		return unavailable(err)
	}
	if already && a.status != http.StatusAccepted {
		return duplicate
	}
	return a
}

// setReadDeadline bounds the reads of the request w answers. A writer
// without a connection under it (a test's recorder) has no read to bound.
func setReadDeadline(w http.ResponseWriter, t time.Time) error {
	err := http.NewResponseController(w).SetReadDeadline(t)
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("set the read deadline: %w", err)
	}
	return nil
}

// eventLabel bounds the metrics' event label to the events GitHub sends an
// App, whatever a client puts in the header.
func eventLabel(event string) string {
	switch event {
	case "ping", "issue_comment", "pull_request_review_comment", "pull_request_review", "issues",
		"pull_request", "push", "installation", "installation_repositories", "check_run", "check_suite", "workflow_run":
		return event
	}
	return "other"
}
