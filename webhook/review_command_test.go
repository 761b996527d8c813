package webhook_test

import (
	"net/http"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/webhook"
)

// "/agent review" in a comment on a pull request is queued as a review,
// as any other command is; who may run it is the worker's to decide.
func TestReviewCommandIsQueued(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	command := fixture(t, "issue_comment/created.with-installation.payload.json", func(m map[string]any) {
		m["comment"].(map[string]any)["body"] = "/agent review focus on errors"
		m["issue"].(map[string]any)["pull_request"] = map[string]any{"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
	})
	if r := in.deliver(t, "issue_comment", "review-1", command); r.Status != http.StatusAccepted {
		t.Fatalf("%d %v; want 202", r.Status, r.Body)
	}
	rec, err := in.store.Task(t.Context(), webhook.TaskID("review-1"))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Verb != app.VerbReview || rec.Instructions != "focus on errors" || !rec.IsPR {
		t.Errorf("queued %+v; want a review of the pull request with its words", rec.Task)
	}
}

// "/agent fix" replied in a review comment's thread keeps the thread's
// first comment, which the worker looks up as a finding's.
func TestFixInAThreadKeepsItsRoot(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	for _, c := range []struct {
		delivery string
		root     float64 // in_reply_to_id, absent when 0
	}{{"thread-reply", 42}, {"thread-root", 0}} {
		command := fixture(t, "pull_request_review_comment/created.payload.json", func(m map[string]any) {
			comment := m["comment"].(map[string]any)
			comment["body"] = "/agent fix"
			delete(comment, "in_reply_to_id")
			if c.root != 0 {
				comment["in_reply_to_id"] = c.root
			}
		})
		if r := in.deliver(t, "pull_request_review_comment", c.delivery, command); r.Status != http.StatusAccepted {
			t.Fatalf("%s: %d %v; want 202", c.delivery, r.Status, r.Body)
		}
		rec, err := in.store.Task(t.Context(), webhook.TaskID(c.delivery))
		if err != nil {
			t.Fatal(err)
		}
		if rc := rec.ReviewComment; rc == nil || rc.InReplyTo != int64(c.root) || rc.ID == 0 {
			t.Errorf("%s: review comment %+v; want in reply to %v", c.delivery, rc, c.root)
		}
	}
}
