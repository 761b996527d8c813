package webhook_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/apptest"
	"github.com/agentbot/agentbot/webhook"
)

// ciObjectKey is where each CI event keeps its check.
var ciObjectKey = map[string]string{"check_run": "check_run", "check_suite": "check_suite", "workflow_run": "workflow_run"}

// isCIFailure reports whether a real payload is a completed, failed check
// on the head of a pull request.
func isCIFailure(t *testing.T, event string, payload []byte) bool {
	t.Helper()
	key, ok := ciObjectKey[event]
	if !ok {
		return false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	var o struct {
		Conclusion   string            `json:"conclusion"`
		PullRequests []json.RawMessage `json:"pull_requests"`
	}
	var action string
	_ = json.Unmarshal(m["action"], &action)
	if err := json.Unmarshal(m[key], &o); err != nil {
		t.Fatal(err)
	}
	return action == "completed" && (o.Conclusion == "failure" || o.Conclusion == "timed_out") && len(o.PullRequests) > 0
}

// ciFixture reads a real CI payload, turned into what a GitHub App
// receives when the check failed: an installation, and the conclusion.
func ciFixture(t *testing.T, event, file, conclusion string) (payload []byte, object map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(apptest.Fixtures(t), "github-webhooks", event, file))
	if err != nil {
		t.Fatal(err)
	}
	payload = rewrite(t, raw, func(m map[string]any) {
		m["installation"] = map[string]any{"id": 7}
		object = m[ciObjectKey[event]].(map[string]any)
		object["conclusion"] = conclusion
	})
	return payload, object
}

func TestFailedCIOnAPullRequestIsAFollowUp(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	tests := []struct{ event, file string }{
		{"check_run", "completed.1.payload.json"},
		{"check_run", "completed.payload.json"},
		{"check_suite", "completed.payload.json"},
		{"check_suite", "completed.with-organization.payload.json"},
		{"workflow_run", "completed.with-pull-requests.payload.json"},
	}
	for _, tc := range tests {
		t.Run(tc.event+"/"+tc.file, func(t *testing.T) {
			payload, o := ciFixture(t, tc.event, tc.file, "failure")
			delivery := "ci-" + tc.event + "-" + tc.file
			r := in.deliver(t, tc.event, delivery, payload)
			if r.Status != http.StatusAccepted || r.Body["task"] != webhook.TaskID(delivery) {
				t.Fatalf("failed %s: %d %v; want 202 with the task", tc.event, r.Status, r.Body)
			}
			rec, err := in.store.Task(t.Context(), webhook.TaskID(delivery))
			if err != nil {
				t.Fatal(err)
			}
			var repo struct {
				FullName string `json:"full_name"`
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(payload, &m); err != nil || json.Unmarshal(m["repository"], &repo) != nil {
				t.Fatal(err)
			}
			pr := o["pull_requests"].([]any)[0].(map[string]any)
			if rec.Verb != app.VerbFixCI || !rec.IsPR || rec.Number != int(pr["number"].(float64)) ||
				rec.InstallationID != 7 || rec.Repo != repo.FullName || rec.Requester == "" {
				t.Errorf("queued %+v; want fix-ci on pull request %v", rec.Task, pr["number"])
			}
			ci := rec.CI
			if ci == nil || ci.Kind != tc.event || ci.ID != int64(o["id"].(float64)) || ci.HeadSHA != o["head_sha"] {
				t.Fatalf("CI = %+v; want the %s's id and head", ci, tc.event)
			}
			if app, ok := o["app"].(map[string]any); ok && ci.AppID != int64(app["id"].(float64)) {
				t.Errorf("CI app %d; want %v", ci.AppID, app["id"])
			}
		})
	}
}

func TestCIEventsThatAreNoFollowUp(t *testing.T) {
	t.Parallel()
	in := startIntake(t, nil)
	tests := []struct {
		name, event, file, conclusion string
		edit                          func(o map[string]any)
		status                        int
	}{
		{"success", "check_run", "completed.1.payload.json", "success", nil, http.StatusOK},
		{"cancelled", "workflow_run", "completed.with-pull-requests.payload.json", "cancelled", nil, http.StatusOK},
		{"no pull request", "workflow_run", "completed.payload.json", "failure", nil, http.StatusOK},
		{"suite of no pull request", "check_suite", "completed.1.payload.json", "failure", nil, http.StatusOK},
		{"created", "check_run", "created.payload.json", "failure", nil, http.StatusOK},
		{"requested", "workflow_run", "requested.payload.json", "failure", nil, http.StatusOK},
		{"no head", "check_run", "completed.1.payload.json", "failure", func(o map[string]any) { delete(o, "head_sha") }, http.StatusBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload, _ := ciFixture(t, tc.event, tc.file, tc.conclusion)
			if tc.edit != nil {
				payload = rewrite(t, payload, func(m map[string]any) { tc.edit(m[ciObjectKey[tc.event]].(map[string]any)) })
			}
			r := in.deliver(t, tc.event, "no-"+tc.name, payload)
			if r.Status != tc.status || (tc.status == http.StatusOK && r.Body["ignored"] == nil) {
				t.Errorf("%s: %d %v; want %d", tc.name, r.Status, r.Body, tc.status)
			}
		})
	}
	if n := len(in.tasks(t)); n != 0 {
		t.Errorf("%d tasks queued; want none", n)
	}
}
