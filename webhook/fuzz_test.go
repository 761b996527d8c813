package webhook_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/hookshot"
)

// FuzzHandler sends arbitrary bodies and headers, signed or not, through
// the handler over a live Redis: it must never panic nor answer anything
// but the documented statuses.
func FuzzHandler(f *testing.F) {
	f.Add(hookshot.IssueComment("/agent fix the typo"), "issue_comment", "d1", true, "")
	f.Add(hookshot.IssueComment("```\n/agent fix\n```"), "issue_comment", "d2", true, "")
	f.Add([]byte(`{"action":"labeled","label":{"name":"agent:fix"},"issue":{"number":1}}`), "issues", "d3", true, "")
	f.Add([]byte(`{"action":"submitted","review":{"body":null},"pull_request":{}}`), "pull_request_review", "d4", true, "")
	f.Add([]byte(`{"zen":"hi"}`), "ping", "d5", false, "sha256=00")
	f.Add([]byte(`null`), "pull_request_review_comment", "", true, "")
	f.Add([]byte(`{"action":"closed","number":2,"pull_request":{"number":2,"merged":true,"merge_commit_sha":"c4295bd74fb0f4fda03689c3df3f2803b658fd85","base":{"ref":"main"},"title":"Revert \"x\"","body":"Reverts #1"},"repository":{"full_name":"o/r","default_branch":"main","clone_url":"https://github.com/o/r.git"},"installation":{"id":1}}`), "pull_request", "d6", true, "")
	f.Add([]byte(`{"ref":"refs/heads/main","commits":[{"id":"0123456789abcdef0123456789abcdef01234567","message":"Revert\n\nThis reverts commit c4295bd7."}],"repository":{"full_name":"o/r","default_branch":"main","clone_url":"https://github.com/o/r.git"},"installation":{"id":1}}`), "push", "d7", true, "")

	rs := redistest.Start(f)
	rdb, err := queue.Connect(rs.URL)
	if err != nil {
		f.Fatal(err)
	}
	defer rdb.Close()
	h, _ := newHandler(f, rdb, nil)

	f.Fuzz(func(t *testing.T, body []byte, event, delivery string, sign bool, signature string) {
		req := httptest.NewRequest(http.MethodPost, "/webhook", bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", event)
		req.Header.Set("X-GitHub-Delivery", delivery)
		if sign {
			signature = webhook.Sign(secret, body)
		}
		req.Header.Set("X-Hub-Signature-256", signature)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusUnauthorized:
		default:
			t.Fatalf("answered %d %s", rec.Code, rec.Body)
		}
	})
}
