package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/apptest"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/hookshot"
)

var secret = []byte("test secret")

// intake is a webhook server over a private Redis.
type intake struct {
	url   string
	redis *redistest.Server
	store *queue.Store
	http  *http.Client
}

// startIntake serves the webhook routes with q as the Enqueuer (the real
// queue client when nil).
func startIntake(t testing.TB, wrap func(webhook.Enqueuer) webhook.Enqueuer) *intake {
	t.Helper()
	rs := redistest.Start(t)
	rdb, err := queue.Connect(rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	h, reg := newHandler(t, rdb, wrap)
	srv := httptest.NewServer(webhook.NewServer(h, queue.NewClient(rdb), promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil))
	t.Cleanup(srv.Close)
	return &intake{url: srv.URL, redis: rs, store: queue.NewStore(rdb), http: srv.Client()}
}

func newHandler(t testing.TB, rdb redis.UniversalClient, wrap func(webhook.Enqueuer) webhook.Enqueuer) (*webhook.Handler, *prometheus.Registry) {
	t.Helper()
	c := queue.NewClient(rdb)
	var q webhook.Enqueuer = c
	if wrap != nil {
		q = wrap(c)
	}
	reg := prometheus.NewRegistry()
	m, err := webhook.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(queue.NewDepthCollector(rdb))
	h, err := webhook.NewHandler(webhook.Config{
		Secrets: [][]byte{[]byte("old secret"), secret}, Queue: q, Deliveries: c, Metrics: m,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, reg
}

func (in *intake) deliver(t testing.TB, event, delivery string, payload []byte) hookshot.Reply {
	t.Helper()
	r, err := hookshot.Deliver(t.Context(), in.http, in.url+"/webhook", secret, event, delivery, payload)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deliverAtOnce delivers payload n times at once, each under the delivery
// id that id gives it, and counts the answers by status.
func (in *intake) deliverAtOnce(t testing.TB, event string, payload []byte, n int, id func(i int) string) map[int]int {
	t.Helper()
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { statuses <- in.deliver(t, event, id(i), payload).Status })
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	return count
}

func (in *intake) tasks(t testing.TB) []queue.Record {
	t.Helper()
	recs, err := in.store.List(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// rewrite decodes a payload, lets edit change it and encodes it again.
func rewrite(t testing.TB, payload []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// commandText is where each commanding event keeps the text of its command.
var commandText = map[string][2]string{
	"issue_comment":               {"comment", "body"},
	"pull_request_review_comment": {"comment", "body"},
	"pull_request_review":         {"review", "body"},
}

// commandAction is the action of each event that can carry a command.
var commandAction = map[string]string{
	"issue_comment": "created", "pull_request_review_comment": "created",
	"pull_request_review": "submitted", "issues": "labeled",
}

// TestEveryFixture sends every real payload, as is and rewritten into a
// command, and checks each answer and what was queued.
func TestEveryFixture(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	root := filepath.Join(apptest.Fixtures(t), "github-webhooks")
	files, err := filepath.Glob(filepath.Join(root, "*", "*.json"))
	if err != nil || len(files) < 100 {
		t.Fatalf("found %d fixtures (%v); want the 104 payloads", len(files), err)
	}
	queued := 0
	reviews := map[any]bool{} // the automatic reviews queued, one per head
	for _, f := range files {
		event := filepath.Base(filepath.Dir(f))
		name := event + "/" + filepath.Base(f)
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Action       string          `json:"action"`
			Installation json.RawMessage `json:"installation"`
		}
		if err := json.Unmarshal(payload, &p); err != nil {
			t.Fatal(err)
		}

		t.Run(name, func(t *testing.T) {
			r := in.deliver(t, event, "plain-"+name, payload)
			switch {
			case event == "ping":
				if r.Status != http.StatusOK || r.Body["pong"] != true {
					t.Errorf("ping: %d %v; want 200 pong", r.Status, r.Body)
				}
			case event == "issues" && p.Action == "labeled" && len(p.Installation) == 0:
				// Any label may be the repository's trigger: only the
				// missing installation stops it.
				if r.Status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(r.Body["error"]), "installation") {
					t.Errorf("labeled without installation: %d %v; want 400 naming the installation", r.Status, r.Body)
				}
			case isCIFailure(t, event, payload) && len(p.Installation) == 0:
				// A failed check on a pull request's head is a follow-up
				// (ci_test.go); only the missing installation stops it.
				if r.Status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(r.Body["error"]), "installation") {
					t.Errorf("failed check without installation: %d %v; want 400 naming the installation", r.Status, r.Body)
				}
			case event == "pull_request" && slices.Contains([]string{"opened", "reopened", "ready_for_review", "synchronize"}, p.Action):
				// A review of the head, once per head (autoreview_test.go),
				// which the worker runs if the policy asks for it.
				switch {
				case len(p.Installation) == 0:
					if r.Status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(r.Body["error"]), "installation") {
						t.Errorf("pull_request %s without installation: %d %v; want 400 naming the installation", p.Action, r.Status, r.Body)
					}
				case r.Body["task"] == nil || (r.Status != http.StatusAccepted && r.Body["duplicate"] != true):
					t.Errorf("pull_request %s: %d %v; want its head's review queued", p.Action, r.Status, r.Body)
				default:
					reviews[r.Body["task"]] = true
				}
			case r.Status != http.StatusOK || r.Body["ignored"] == nil:
				t.Errorf("unchanged payload: %d %v; want 200 ignored (none holds a command)", r.Status, r.Body)
			}
		})

		var command []byte
		if at, ok := commandText[event]; ok {
			command = rewrite(t, payload, func(m map[string]any) {
				m[at[0]].(map[string]any)[at[1]] = "Thanks!\n\n/agent fix the typo\nin the README"
			})
		} else if event == "issues" && p.Action == "labeled" {
			command = rewrite(t, payload, func(m map[string]any) {
				m["label"].(map[string]any)["name"] = "agent:fix"
			})
		}
		if command == nil {
			continue
		}
		t.Run(name+"/command", func(t *testing.T) {
			delivery := "command-" + name
			r := in.deliver(t, event, delivery, command)
			switch {
			case p.Action != commandAction[event]:
				if r.Status != http.StatusOK || r.Body["ignored"] == nil {
					t.Errorf("%s %s: %d %v; want 200 ignored", event, p.Action, r.Status, r.Body)
				}
			case len(p.Installation) == 0:
				if r.Status != http.StatusBadRequest || !strings.Contains(fmt.Sprint(r.Body["error"]), "installation") {
					t.Errorf("without installation: %d %v; want 400 naming the installation", r.Status, r.Body)
				}
				// The same delivery as a GitHub App receives it is accepted.
				delivery += "+installation"
				withInstallation := rewrite(t, command, func(m map[string]any) {
					m["installation"] = map[string]any{"id": 1}
				})
				if r := in.deliver(t, event, delivery, withInstallation); r.Status != http.StatusAccepted {
					t.Fatalf("with an installation: %d %v; want 202", r.Status, r.Body)
				}
				queued++
				checkTask(t, in, event, delivery)
			default:
				if r.Status != http.StatusAccepted || r.Body["task"] != webhook.TaskID(delivery) {
					t.Fatalf("command: %d %v; want 202 with the task", r.Status, r.Body)
				}
				queued++
				checkTask(t, in, event, delivery)
			}
		})
	}
	if got := len(in.tasks(t)); got != queued+len(reviews) {
		t.Errorf("%d tasks in Redis; want the %d accepted and the %d reviews", got, queued, len(reviews))
	}
	if queued < 4 {
		t.Errorf("only %d commands accepted; every commanding event should have one", queued)
	}
}

func checkTask(t *testing.T, in *intake, event, delivery string) {
	t.Helper()
	rec, err := in.store.Task(t.Context(), webhook.TaskID(delivery))
	if err != nil {
		t.Fatal(err)
	}
	want := app.Task{
		ID: webhook.TaskID(delivery), Delivery: delivery, Event: event, InstallationID: 1,
		Repo: "Codertocat/Hello-World", Verb: app.VerbFix, Instructions: "the typo\nin the README",
		Requester: "Codertocat", RequesterID: 21031067, ReceivedAt: rec.ReceivedAt,
	}
	switch event {
	case "issue_comment":
		want.Number, want.CommentID = 1, rec.CommentID
	case "pull_request_review_comment":
		want.Number, want.IsPR, want.CommentID = 2, true, rec.CommentID
		if rc := rec.ReviewComment; rc == nil || rc.Path != "README.md" || rc.Line == 0 || rc.DiffHunk == "" || rc.ID != rec.CommentID {
			t.Errorf("review comment = %+v; want path, line and diff hunk", rc)
		}
		want.ReviewComment = rec.ReviewComment
	case "pull_request_review":
		// A fix command in a review addresses the review's inline
		// comments; a review is nothing to react to.
		want.Number, want.IsPR = 2, true
		if rv := rec.Review; rv == nil || rv.ID == 0 || rv.Implicit {
			t.Errorf("review = %+v; want the review's id, explicit", rv)
		}
		want.Review = rec.Review
	case "issues":
		want.Number, want.Instructions, want.Label = 1, "", "agent:fix"
	}
	if rec.Task != want || rec.State != app.StateQueued || rec.ReceivedAt.IsZero() {
		t.Errorf("queued %+v (%s);\nwant   %+v (queued)", rec.Task, rec.State, want)
	}
	if event != "issues" && event != "pull_request_review" && rec.CommentID == 0 {
		t.Error("no comment id")
	}
}

func TestSignatureVector(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(apptest.Fixtures(t), "github-signature-vector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Secret, Payload, Signature256 string }
	v.Signature256 = "" // filled from the JSON key below
	var raw map[string]string
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	v.Secret, v.Payload, v.Signature256 = raw["secret"], raw["payload"], raw["signature_256"]

	secrets := [][]byte{[]byte("another"), []byte(v.Secret)}
	if got := webhook.Sign([]byte(v.Secret), []byte(v.Payload)); got != v.Signature256 {
		t.Errorf("Sign = %s; want %s", got, v.Signature256)
	}
	if !webhook.ValidSignature(secrets, []byte(v.Payload), v.Signature256) {
		t.Fatal("the official vector does not verify")
	}
	payload := []byte(v.Payload)
	payload[0] ^= 1
	if webhook.ValidSignature(secrets, payload, v.Signature256) {
		t.Error("a one-bit change of the payload verifies")
	}
	sig := []byte(v.Signature256)
	sig[len(sig)-1] ^= 1
	if webhook.ValidSignature(secrets, []byte(v.Payload), string(sig)) {
		t.Error("a one-bit change of the signature verifies")
	}
	for _, h := range []string{"", "sha256=", "sha1=" + v.Signature256[7:], strings.ToUpper(v.Signature256), v.Signature256[7:]} {
		if webhook.ValidSignature(secrets, []byte(v.Payload), h) {
			t.Errorf("header %q verifies", h)
		}
	}
}

func TestRefusedDeliveriesQueueNothing(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	command := hookshot.IssueComment("/agent fix")
	post := func(payload []byte, header map[string]string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, in.url+"/webhook", bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := in.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	headers := func(payload []byte, key []byte) map[string]string {
		return map[string]string{"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d1",
			"X-Hub-Signature-256": webhook.Sign(key, payload)}
	}
	big := make([]byte, webhook.MaxBody+1)
	tests := []struct {
		name    string
		payload []byte
		header  map[string]string
		status  int
	}{
		{"no signature", command, map[string]string{"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d1"}, 401},
		{"SHA-1 signature only", command, map[string]string{"X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d1",
			"X-Hub-Signature": "sha1=0000000000000000000000000000000000000000"}, 401},
		{"wrong secret", command, headers(command, []byte("guess")), 401},
		{"larger than 25 MiB", big, headers(big, secret), 413},
		{"no delivery id", command, map[string]string{"X-GitHub-Event": "issue_comment",
			"X-Hub-Signature-256": webhook.Sign(secret, command)}, 400},
		{"no event", command, map[string]string{"X-GitHub-Delivery": "d1",
			"X-Hub-Signature-256": webhook.Sign(secret, command)}, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := post(tt.payload, tt.header); status != tt.status {
				t.Errorf("status %d %s; want %d", status, body, tt.status)
			}
		})
	}
	if n := len(in.tasks(t)); n != 0 {
		t.Errorf("%d tasks queued by refused deliveries", n)
	}
	// The refused delivery "d1" was not remembered: signed, it is accepted.
	if r := in.deliver(t, "issue_comment", "d1", command); r.Status != http.StatusAccepted {
		t.Errorf("d1 after refusals: %d %v; want 202", r.Status, r.Body)
	}
}

func TestBadPayloads(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	bot := rewrite(t, hookshot.IssueComment("/agent fix"), func(m map[string]any) {
		m["sender"].(map[string]any)["type"] = "Bot"
	})
	noComment := rewrite(t, hookshot.IssueComment("/agent fix"), func(m map[string]any) { delete(m, "comment") })
	noRepo := rewrite(t, hookshot.IssueComment("/agent fix"), func(m map[string]any) { delete(m, "repository") })
	tests := []struct {
		name    string
		event   string
		payload []byte
		status  int
		key     string // in the answer
	}{
		{"not JSON", "issue_comment", []byte("{nope"), 400, "error"},
		{"not an object", "issue_comment", []byte(`[1,2]`), 400, "error"},
		{"wrong type", "issue_comment", []byte(`{"action":"created","comment":{"body":7}}`), 400, "error"},
		{"no comment", "issue_comment", noComment, 400, "error"},
		{"no repository", "issue_comment", noRepo, 400, "error"},
		{"sender is a bot", "issue_comment", bot, 200, "ignored"},
		{"unknown event", "deployment", []byte(`{}`), 200, "ignored"},
		{"help reply", "issue_comment", hookshot.IssueComment("/agent"), 202, "task"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := in.deliver(t, tt.event, fmt.Sprint("bad-", i), tt.payload)
			if r.Status != tt.status || r.Body[tt.key] == nil {
				t.Errorf("%d %v; want %d with %q", r.Status, r.Body, tt.status, tt.key)
			}
		})
	}
	recs := in.tasks(t)
	if len(recs) != 1 || recs[0].Verb != app.VerbHelp || recs[0].Instructions == "" {
		t.Errorf("queued %+v; want only the help task with its reason", recs)
	}
}

func TestDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	payload := hookshot.IssueComment("/agent status")
	if r := in.deliver(t, "issue_comment", "once", payload); r.Status != http.StatusAccepted {
		t.Fatalf("first delivery: %d %v", r.Status, r.Body)
	}
	if r := in.deliver(t, "issue_comment", "once", payload); r.Status != http.StatusOK || r.Body["duplicate"] != true {
		t.Fatalf("redelivery: %d %v; want 200 duplicate", r.Status, r.Body)
	}

	plain := hookshot.IssueComment("just a comment")
	if r := in.deliver(t, "issue_comment", "plain", plain); r.Status != http.StatusOK || r.Body["ignored"] == nil {
		t.Fatalf("first delivery of a plain comment: %d %v; want 200 ignored", r.Status, r.Body)
	}
	if r := in.deliver(t, "issue_comment", "plain", plain); r.Status != http.StatusOK || r.Body["duplicate"] != true {
		t.Fatalf("its redelivery: %d %v; want 200 duplicate", r.Status, r.Body)
	}

	const n = 16
	concurrent := hookshot.IssueComment("/agent status")
	count := in.deliverAtOnce(t, "issue_comment", concurrent, n, func(int) string { return "concurrent" })
	if count[http.StatusAccepted] != 1 || count[http.StatusOK] != n-1 {
		t.Errorf("concurrent deliveries answered %v; want one 202 and %d 200", count, n-1)
	}
	if got := len(in.tasks(t)); got != 2 {
		t.Errorf("%d tasks; want 2", got)
	}
}

// TestReplayedBodyIsDuplicate replays signed bodies under new delivery ids,
// as anyone who saw one delivery could: a command, an outcome event, and
// the same command replayed many times at once. Each replay is answered as
// a duplicate and queues nothing.
func TestReplayedBodyIsDuplicate(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	command := hookshot.IssueComment("/agent fix")
	if r := in.deliver(t, "issue_comment", "original", command); r.Status != http.StatusAccepted {
		t.Fatalf("original: %d %v; want 202", r.Status, r.Body)
	}
	if r := in.deliver(t, "issue_comment", "replay", command); r.Status != http.StatusOK || r.Body["duplicate"] != true {
		t.Errorf("replay under a new delivery id: %d %v; want 200 duplicate", r.Status, r.Body)
	}
	if r := in.deliver(t, "issue_comment", "original", command); r.Status != http.StatusOK || r.Body["duplicate"] != true {
		t.Errorf("redelivery of the original: %d %v; want 200 duplicate", r.Status, r.Body)
	}

	revert := []byte(`{"ref":"refs/heads/main","commits":[{"id":"0123456789abcdef0123456789abcdef01234567","message":"Revert\n\nThis reverts commit c4295bd74fb0f4fda03689c3df3f2803b658fd85."}],"repository":{"full_name":"o/r","default_branch":"main","clone_url":"https://github.com/o/r.git"},"installation":{"id":1}}`)
	if r := in.deliver(t, "push", "push-original", revert); r.Status != http.StatusAccepted {
		t.Fatalf("push: %d %v; want 202", r.Status, r.Body)
	}
	if r := in.deliver(t, "push", "push-replay", revert); r.Status != http.StatusOK || r.Body["duplicate"] != true {
		t.Errorf("replayed push: %d %v; want 200 duplicate", r.Status, r.Body)
	}

	const n = 16
	fresh := hookshot.IssueComment("/agent fix it again")
	count := in.deliverAtOnce(t, "issue_comment", fresh, n, func(i int) string { return fmt.Sprint("replay-", i) })
	if count[http.StatusAccepted] != 1 || count[http.StatusOK] != n-1 {
		t.Errorf("one body under %d delivery ids at once answered %v; want one 202 and %d 200", n, count, n-1)
	}
	if got := len(in.tasks(t)); got != 2 {
		t.Errorf("%d tasks; want the 2 original commands", got)
	}
}

// failingEnqueuer fails its first call, as an enqueue interrupted by Redis
// going away would.
type failingEnqueuer struct {
	webhook.Enqueuer
	mu     sync.Mutex
	failed bool
}

func (f *failingEnqueuer) Enqueue(ctx context.Context, t app.Task) (bool, error) {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return false, errors.New("connection reset")
	}
	return f.Enqueuer.Enqueue(ctx, t)
}

func TestFailedEnqueueLeavesDeliveryFree(t *testing.T) {
	t.Parallel()
	in := startIntake(t, func(q webhook.Enqueuer) webhook.Enqueuer { return &failingEnqueuer{Enqueuer: q} })
	payload := hookshot.IssueComment("/agent fix")
	if r := in.deliver(t, "issue_comment", "flaky", payload); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("failed enqueue: %d %v; want 503", r.Status, r.Body)
	}
	if r := in.deliver(t, "issue_comment", "flaky", payload); r.Status != http.StatusAccepted {
		t.Fatalf("redelivery after a failed enqueue: %d %v; want 202, not duplicate", r.Status, r.Body)
	}
	if n := len(in.tasks(t)); n != 1 {
		t.Errorf("%d tasks; want 1", n)
	}
}

func TestRedisStoppedThenBack(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	get := func(path string) int {
		resp, err := in.http.Get(in.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	payload := hookshot.IssueComment("/agent fix")
	if r := in.deliver(t, "issue_comment", "before", payload); r.Status != http.StatusAccepted {
		t.Fatalf("with Redis: %d %v", r.Status, r.Body)
	}

	in.redis.Stop()
	payload = hookshot.IssueComment("/agent fix")
	for _, event := range []string{"issue_comment", "push"} {
		if r := in.deliver(t, event, "during-"+event, payload); r.Status != http.StatusServiceUnavailable {
			t.Errorf("%s with Redis stopped: %d %v; want 503", event, r.Status, r.Body)
		}
	}
	if s := get("/readyz"); s != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Redis stopped: %d; want 503", s)
	}
	if s := get("/healthz"); s != http.StatusOK {
		t.Errorf("/healthz with Redis stopped: %d; want 200", s)
	}

	in.redis.Restart()
	if r := in.deliver(t, "issue_comment", "during-issue_comment", payload); r.Status != http.StatusAccepted {
		t.Errorf("redelivery with Redis back: %d %v; want 202", r.Status, r.Body)
	}
	if s := get("/readyz"); s != http.StatusOK {
		t.Errorf("/readyz with Redis back: %d; want 200", s)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	in.deliver(t, "issue_comment", "m1", hookshot.IssueComment("/agent fix"))
	in.deliver(t, "issue_comment", "m2", hookshot.IssueComment("no command"))
	resp, err := in.http.Get(in.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`agentbot_webhook_requests_total{event="issue_comment",outcome="accepted"} 1`,
		`agentbot_webhook_requests_total{event="issue_comment",outcome="ignored"} 1`,
		`agentbot_webhook_ack_seconds_count 2`,
		`agentbot_queue_depth{queue="default",state="pending"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestNewHandlerRefusesNoSecret(t *testing.T) {
	t.Parallel()
	for _, secrets := range [][][]byte{nil, {[]byte("")}} {
		if _, err := webhook.NewHandler(webhook.Config{Secrets: secrets}); err == nil {
			t.Errorf("NewHandler with secrets %q succeeded", secrets)
		}
	}
}

// TestIntakeLinksNoDockerNorGitHubClient keeps the internet-facing request
// path free of the Docker client and of any GitHub API client: webhook and
// everything it imports must not depend on go-github, ghinstallation, JWT
// or Docker. github.com/docker/go-units, a byte-size parser the policy uses,
// is the one package of Docker's organisation allowed: it links nothing of
// the engine or its client.
func TestIntakeLinksNoDockerNorGitHubClient(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/agentbot/agentbot/webhook").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/gorilla/mux") || !slices.Contains(deps, "github.com/agentbot/agentbot/app") {
		t.Fatalf("go list names neither gorilla/mux nor app; is it webhook's dependency list?\n%s", out)
	}
	for _, dep := range deps {
		lower := strings.ToLower(dep)
		switch {
		case dep == "github.com/docker/go-units":
		case strings.Contains(lower, "go-github"),
			strings.Contains(lower, "ghinstallation"),
			strings.Contains(lower, "jwt"),
			strings.Contains(lower, "docker"),
			strings.HasPrefix(dep, "github.com/moby/"),
			strings.HasPrefix(dep, "github.com/agentbot/agentbot/app/github"):
			t.Errorf("webhook depends on %s", dep)
		}
	}
}

// TestRedisThatNeverAnswers points the handler at a server that accepts
// connections and says nothing: the answer must still be a 503, not a hang.
func TestRedisThatNeverAnswers(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn // open and silent until the listener closes
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	rdb, err := queue.Connect("redis://" + l.Addr().String() + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	h, _ := newHandler(t, rdb, nil)
	srv := httptest.NewServer(h)
	defer srv.Close()

	client := &http.Client{Timeout: 30 * time.Second} // a guard against a hang, not a measurement
	r, err := hookshot.Deliver(t.Context(), client, srv.URL, secret, "issue_comment", "silent",
		hookshot.IssueComment("/agent fix"))
	if err != nil || r.Status != http.StatusServiceUnavailable {
		t.Fatalf("with a silent Redis: %d %v %v; want 503", r.Status, r.Body, err)
	}
}
