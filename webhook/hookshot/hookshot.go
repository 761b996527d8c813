// Package hookshot sends webhooks as GitHub's own sender (Hookshot) does:
// a real issue_comment payload, signed, with the event and delivery
// headers. The intake benchmark ("agentbot bench webhook") drives an intake
// with it, so it is product code; the webhook tests use it too.
package hookshot

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/agentbot/agentbot/webhook"
)

// issueComment is a real issue_comment "created" delivery from an App
// installation (see testdata/README.md).
//
//go:embed testdata/issue_comment.created.json
var issueComment []byte

// IssueComment returns a real issue_comment "created" payload whose comment
// body is replaced by body. Each call is a new comment, with its own id and
// time, as each of GitHub's deliveries is: the intake takes the same
// payload under a new delivery id for a replay.
func IssueComment(body string) []byte {
	var m map[string]any
	if err := json.Unmarshal(issueComment, &m); err != nil {
		panic(fmt.Sprintf("embedded payload: %v", err)) // the file is part of the build
	}
	c := m["comment"].(map[string]any)
	id := rand.Int64N(1<<40) + 1 // unique across runs that share a Redis
	now := time.Now().UTC().Format(time.RFC3339)
	c["body"], c["id"], c["created_at"], c["updated_at"] = body, id, now, now
	c["html_url"] = fmt.Sprintf("%s#issuecomment-%d", m["issue"].(map[string]any)["html_url"], id)
	out, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("re-encode payload: %v", err))
	}
	return out
}

// Reply is a delivery's answer.
type Reply struct {
	Status int
	Body   map[string]any
}

// Deliver POSTs payload to url as GitHub would: signed with secret, with the
// event and delivery headers.
func Deliver(ctx context.Context, c *http.Client, url string, secret []byte, event, delivery string, payload []byte) (Reply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return Reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/agentbot")
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", webhook.Sign(secret, payload))
	resp, err := c.Do(req)
	if err != nil {
		return Reply{}, fmt.Errorf("deliver %s: %w", delivery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, fmt.Errorf("deliver %s: read answer: %w", delivery, err)
	}
	r := Reply{Status: resp.StatusCode}
	if err := json.Unmarshal(b, &r.Body); err != nil {
		return r, fmt.Errorf("deliver %s: answer %d is not JSON: %q", delivery, resp.StatusCode, b)
	}
	return r, nil
}
