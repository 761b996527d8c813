package webhook_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/apptest"
	"github.com/agentbot/agentbot/webhook"
)

// eventRecorder passes everything to the real queue and keeps the outcome
// events it queued.
type eventRecorder struct {
	webhook.Enqueuer
	mu     sync.Mutex
	events []app.OutcomeEvent
}

func (r *eventRecorder) EnqueueEvent(ctx context.Context, e app.OutcomeEvent) (bool, error) {
	dup, err := r.Enqueuer.EnqueueEvent(ctx, e)
	if err == nil && !dup {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	}
	return dup, err
}

func (r *eventRecorder) queued() []app.OutcomeEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]app.OutcomeEvent(nil), r.events...)
}

func fixture(t *testing.T, name string, edit func(m map[string]any)) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(apptest.Fixtures(t), "github-webhooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return rewrite(t, raw, edit)
}

func TestOutcomeEvents(t *testing.T) {
	t.Parallel()
	rec := &eventRecorder{}
	in := startIntake(t, func(q webhook.Enqueuer) webhook.Enqueuer { rec.Enqueuer = q; return rec })

	const sha = "c4295bd74fb0f4fda03689c3df3f2803b658fd85"
	pull := func(action string, merged bool, title, body string, edit func(m map[string]any)) []byte {
		return fixture(t, "pull_request/closed.payload.json", func(m map[string]any) {
			m["action"] = action
			pr := m["pull_request"].(map[string]any)
			pr["merged"], pr["title"], pr["body"] = merged, title, body
			if merged {
				pr["merge_commit_sha"] = sha
			}
			if edit != nil {
				edit(m)
			}
		})
	}
	push := func(ref, message string) []byte {
		return fixture(t, "push/with-new-branch.payload.json", func(m map[string]any) {
			m["ref"] = ref
			c := m["commits"].([]any)[0].(map[string]any)
			c["message"], c["id"] = message, "0123456789abcdef0123456789abcdef01234567"
		})
	}
	const repo, clone = "Codertocat/Hello-World", "https://github.com/Codertocat/Hello-World.git"
	merge := &app.Merge{PR: 2, Commit: sha, Base: "master"}
	revertMsg := "Revert \"Update the README\"\n\nThis reverts commit " + sha + ".\n"
	cases := []struct {
		name    string
		event   string
		payload []byte
		status  int
		want    *app.OutcomeEvent // the event queued, without its ids and time
	}{
		{"a merged pull request", "pull_request", pull("closed", true, "Update the README", "", nil), 202,
			&app.OutcomeEvent{Merge: merge}},
		{"a merged revert pull request", "pull_request", pull("closed", true, `Revert "Update the README"`, "Reverts "+repo+"#1", nil), 202,
			&app.OutcomeEvent{Merge: merge, Reverts: []app.Revert{{Repo: repo, PR: 2, RevertsPRs: []int{1}}}}},
		{"a revert pushed to the default branch", "push", push("refs/heads/master", revertMsg), 202,
			&app.OutcomeEvent{Reverts: []app.Revert{{Repo: repo, Commit: "0123456789abcdef0123456789abcdef01234567", Reverts: []string{sha}}}}},
		{"an ordinary push", "push", push("refs/heads/master", "Fix the build"), 200, nil},
		{"a revert pushed to another branch", "push", push("refs/heads/topic", revertMsg), 200, nil},
		{"a pull request closed unmerged", "pull_request", pull("closed", false, "x", "", nil), 200, nil},
		{"a pull request labeled", "pull_request", pull("labeled", false, "x", "", nil), 200, nil},
		{"a merge without installation", "pull_request", pull("closed", true, "x", "", func(m map[string]any) { delete(m, "installation") }), 400, nil},
		{"a merge without its merge commit", "pull_request", pull("closed", true, "x", "", func(m map[string]any) {
			m["pull_request"].(map[string]any)["merge_commit_sha"] = nil
		}), 400, nil},
		{"a merge that is not JSON", "pull_request", []byte(`{"action": "closed", "pull_request": {"merged": true}, "number": "x"`), 400, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(rec.queued())
			delivery := "outcome-" + c.name
			r := in.deliver(t, c.event, delivery, c.payload)
			if r.Status != c.status {
				t.Fatalf("%d %v; want %d", r.Status, r.Body, c.status)
			}
			queued := rec.queued()[before:]
			if c.want == nil {
				if len(queued) != 0 || (c.status == 200 && r.Body["ignored"] == nil) {
					t.Fatalf("%v, queued %+v; want nothing queued", r.Body, queued)
				}
				return
			}
			if r.Body["event"] != webhook.TaskID(delivery) || len(queued) != 1 {
				t.Fatalf("%v, queued %+v; want one event with the delivery's id", r.Body, queued)
			}
			got, want := queued[0], *c.want
			want.ID, want.Delivery, want.Event, want.ReceivedAt = webhook.TaskID(delivery), delivery, c.event, got.ReceivedAt
			want.InstallationID, want.Repo, want.CloneURL = 1, repo, clone
			if got.ReceivedAt.IsZero() || !reflect.DeepEqual(got, want) {
				t.Errorf("queued %+v;\nwant   %+v", got, want)
			}
			// GitHub's redelivery is answered as a duplicate and queues
			// nothing.
			if r := in.deliver(t, c.event, delivery, c.payload); r.Status != http.StatusOK || r.Body["duplicate"] != true || r.Body["event"] != webhook.TaskID(delivery) {
				t.Errorf("redelivery: %d %v; want 200 duplicate with the event", r.Status, r.Body)
			}
			if n := len(rec.queued()) - before; n != 1 {
				t.Errorf("%d events queued after the redelivery, want 1", n)
			}
		})
	}
	if n := len(in.tasks(t)); n != 0 {
		t.Errorf("%d tasks queued by outcome events, want none", n)
	}
}
