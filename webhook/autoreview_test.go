package webhook_test

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/webhook"
)

// A pull request opened, reopened, marked ready or pushed to is queued as
// a review of its head, once per head whatever the events and their
// redeliveries; whether it runs is the worker's to decide. Other actions,
// and a bot's events, queue nothing.
func TestPullRequestEventsQueueOneReviewPerHead(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	const repo, head, pushed = "Codertocat/Hello-World", "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "0123456789abcdef0123456789abcdef01234567"
	first := webhook.ReviewTaskID(repo, 2, head)
	asIs := func(map[string]any) {}

	opened := fixture(t, "pull_request/opened.payload.json", asIs)
	r := in.deliver(t, "pull_request", "pr-opened", opened)
	if r.Status != http.StatusAccepted || r.Body["task"] != first {
		t.Fatalf("opened: %d %v; want 202 with task %s", r.Status, r.Body, first)
	}
	rec, err := in.store.Task(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Task
	want := app.Task{ID: first, Delivery: "pr-opened", Event: "pull_request", InstallationID: 1, Repo: repo, Number: 2, IsPR: true,
		Verb: app.VerbReview, Requester: "Codertocat", RequesterID: 21031067, ReceivedAt: got.ReceivedAt,
		Auto: &app.AutoReview{Action: "opened", HeadSHA: head}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("queued %+v %+v;\nwant   %+v %+v", got, got.Auto, want, want.Auto)
	}

	// The same head again: the task already queued answers.
	for _, name := range []string{"reopened.payload.json", "ready_for_review.with-installation.payload.json", "synchronize.payload.json"} {
		r := in.deliver(t, "pull_request", "pr-"+name, fixture(t, "pull_request/"+name, asIs))
		if r.Status != http.StatusOK || r.Body["duplicate"] != true || r.Body["task"] != first {
			t.Errorf("%s on the same head: %d %v; want 200 duplicate of %s", name, r.Status, r.Body, first)
		}
	}
	// A push moves the head: a review of the new one.
	r = in.deliver(t, "pull_request", "pr-pushed", fixture(t, "pull_request/synchronize.payload.json", func(m map[string]any) {
		m["pull_request"].(map[string]any)["head"].(map[string]any)["sha"] = pushed
		m["after"] = pushed
	}))
	if second := webhook.ReviewTaskID(repo, 2, pushed); r.Status != http.StatusAccepted || r.Body["task"] != second {
		t.Errorf("a push: %d %v; want 202 with task %s", r.Status, r.Body, second)
	}
	if rec, err := in.store.Task(t.Context(), webhook.ReviewTaskID(repo, 2, pushed)); err != nil || rec.Auto == nil || rec.Auto.Action != "synchronize" || rec.Auto.HeadSHA != pushed {
		t.Errorf("the push's review %+v (%v)", rec.Task, err)
	}
	// A draft is queued with its state, for the worker to weigh against
	// review.drafts.
	r = in.deliver(t, "pull_request", "pr-draft", fixture(t, "pull_request/opened.payload.json", func(m map[string]any) {
		m["number"] = 3
		m["pull_request"].(map[string]any)["draft"] = true
	}))
	if rec, err := in.store.Task(t.Context(), webhook.ReviewTaskID(repo, 3, head)); r.Status != http.StatusAccepted || err != nil || !rec.Auto.Draft {
		t.Errorf("a draft: %d %v, queued %+v (%v); want its draft state queued", r.Status, r.Body, rec.Task, err)
	}

	for _, c := range []struct {
		name    string
		payload []byte
		status  int
	}{
		{"converted to draft", fixture(t, "pull_request/converted_to_draft.with-installation.payload.json", asIs), http.StatusOK},
		{"labeled", fixture(t, "pull_request/labeled.payload.json", asIs), http.StatusOK},
		{"opened by a bot", fixture(t, "pull_request/opened.payload.json", func(m map[string]any) {
			m["number"] = 4
			m["sender"].(map[string]any)["type"] = "Bot"
		}), http.StatusOK},
		{"opened without installation", fixture(t, "pull_request/opened.payload.json", func(m map[string]any) {
			m["number"] = 5
			delete(m, "installation")
		}), http.StatusBadRequest},
		{"opened without a head", fixture(t, "pull_request/opened.payload.json", func(m map[string]any) {
			m["number"] = 6
			delete(m["pull_request"].(map[string]any), "head")
		}), http.StatusBadRequest},
	} {
		if r := in.deliver(t, "pull_request", "pr-"+c.name, c.payload); r.Status != c.status || r.Body["task"] != nil {
			t.Errorf("%s: %d %v; want %d and no task", c.name, r.Status, r.Body, c.status)
		}
	}
	if n := len(in.tasks(t)); n != 3 {
		t.Errorf("%d tasks queued; want 3: the two heads of #2 and the draft", n)
	}
}
