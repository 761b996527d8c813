package github

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// deliveryTimeout is how long GitHub waits for a webhook answer.
const deliveryTimeout = 10 * time.Second

// Signature256 is the X-Hub-Signature-256 value GitHub sends for body.
func Signature256(secret string, body []byte) string {
	return "sha256=" + hmacHex(sha256.New, secret, body)
}

// Signature1 is the legacy X-Hub-Signature value GitHub still sends.
func Signature1(secret string, body []byte) string {
	return "sha1=" + hmacHex(sha1.New, secret, body)
}

func hmacHex(h func() hash.Hash, secret string, body []byte) string {
	mac := hmac.New(h, []byte(secret))
	mac.Write(body)
	return hex.EncodeToString(mac.Sum(nil))
}

// Deliver sends one webhook to url as GitHub does: the JSON payload (a
// []byte is sent as is) signed with the App's webhook secret, with
// X-GitHub-Event, a fresh X-GitHub-Delivery and the hook headers. The
// response body is read and kept, so closing it is optional.
func (s *Server) Deliver(ctx context.Context, url, event string, payload any) (*http.Response, error) {
	body, ok := payload.([]byte)
	if !ok {
		var err error
		if body, err = json.Marshal(payload); err != nil {
			return nil, fmt.Errorf("deliver %s: encode payload: %w", event, err)
		}
	}
	s.mu.Lock()
	secret, appID, hookID := s.app.WebhookSecret, s.app.ID, s.hookID
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, deliveryTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("deliver %s: %w", event, err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/"+randomHex(4)[:7])
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", uuid.NewString())
	h.Set("X-GitHub-Hook-ID", strconv.FormatInt(hookID, 10))
	h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(appID, 10))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	h.Set("X-Hub-Signature", Signature1(secret, body))
	h.Set("X-Hub-Signature-256", Signature256(secret, body))
	d := Delivery{GUID: h.Get("X-GitHub-Delivery"), URL: url, Event: event, Action: actionOf(body)}
	resp, err := send(req)
	if err != nil {
		d.Err = fmt.Errorf("deliver %s to %s: %w", event, url, err)
	} else {
		d.Status = resp.StatusCode
	}
	s.mu.Lock()
	s.deliveries = append(s.deliveries, d)
	s.mu.Unlock()
	return resp, d.Err
}

// send makes the request and keeps the answer's body in memory.
func send(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	return resp, nil
}

// actionOf reads a payload's "action", for the delivery log.
func actionOf(body []byte) string {
	var p struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(body, &p) // a payload without one is logged without one
	return p.Action
}

// envelopeLocked is what every App webhook carries besides the event's
// own objects: action, repository, sender, installation, organization.
func (s *Server) envelopeLocked(rp *repo, action, sender string) obj {
	m := obj{
		"action": action, "repository": s.repoJSON(rp, false), "sender": s.loginJSON(sender),
		"installation": obj{"id": rp.install, "node_id": nodeID("Installation", rp.install)},
	}
	if o := rp.owner; o.typ == "Organization" {
		api := s.api + "/orgs/" + o.login
		m["organization"] = obj{
			"login": o.login, "id": o.id, "node_id": nodeID("Organization", o.id), "url": api,
			"repos_url": api + "/repos", "events_url": api + "/events", "hooks_url": api + "/hooks",
			"issues_url": api + "/issues", "members_url": api + "/members{/member}",
			"public_members_url": api + "/public_members{/member}",
			"avatar_url":         fmt.Sprintf("%s/avatars/u/%d?v=4", s.base, o.id), "description": nil,
		}
	}
	return m
}

// DeliverIssueComment posts author's comment on issue (or pull request)
// number of repo and delivers the issue_comment "created" event GitHub
// sends for it. It returns the comment's id.
func (s *Server) DeliverIssueComment(ctx context.Context, url, repo string, number int, author, body string) (int64, *http.Response, error) {
	s.mu.Lock()
	rp, _, err := s.lookupLocked(repo, number)
	if err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	c := s.addCommentLocked(rp, number, author, body)
	payload := s.commentEventLocked(rp, c, "created", author)
	s.mu.Unlock()
	resp, err := s.Deliver(ctx, url, "issue_comment", payload)
	return c.ID, resp, err
}

// commentEventLocked is the issue_comment payload for c.
func (s *Server) commentEventLocked(rp *repo, c *Comment, action, sender string) obj {
	payload := s.envelopeLocked(rp, action, sender)
	payload["issue"] = s.issueJSON(rp, rp.issues[c.Issue-1])
	payload["comment"] = s.commentJSON(rp, c)
	return payload
}

// DeliverReviewComment posts author's comment on line of path in pull
// request number's diff and delivers the pull_request_review_comment
// "created" event. It returns the comment's id.
func (s *Server) DeliverReviewComment(ctx context.Context, url, repo string, number int, author, path string, line int, body string) (int64, *http.Response, error) {
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return 0, nil, err
	}
	v := s.view(rp, is, false)
	s.mu.Lock()
	c := s.addReviewCommentLocked(rp, &ReviewComment{Pull: number, ReviewID: s.newID(), Author: author, Body: body, Path: path, Line: line, CommitID: v.headSHA})
	payload := s.envelopeLocked(rp, "created", author)
	payload["comment"] = s.reviewCommentJSON(rp, c)
	payload["pull_request"] = s.pullJSON(rp, is, v, false)
	s.mu.Unlock()
	resp, err := s.Deliver(ctx, url, "pull_request_review_comment", payload)
	return c.ID, resp, err
}

// DeliverReview submits author's review of pull request number (state
// APPROVED, CHANGES_REQUESTED or COMMENTED) and delivers the
// pull_request_review "submitted" event.
func (s *Server) DeliverReview(ctx context.Context, url, repo string, number int, author, state, body string) (*http.Response, error) {
	_, _, resp, err := s.DeliverReviewWithComments(ctx, url, repo, number, author, state, body, nil)
	return resp, err
}

// DeliverLabeled adds label to issue (or pull request) number as sender
// and delivers the issues (or pull_request) "labeled" event.
func (s *Server) DeliverLabeled(ctx context.Context, url, repo string, number int, label, sender string) (*http.Response, error) {
	s.mu.Lock()
	rp, is, err := s.lookupLocked(repo, number)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if !containsFold(is.Labels, label) {
		is.Labels = append(is.Labels, label)
	}
	pull := is.Pull != nil
	s.mu.Unlock()
	var v pullView
	if pull {
		v = s.view(rp, is, true)
	}
	s.mu.Lock()
	payload := s.envelopeLocked(rp, "labeled", sender)
	payload["label"] = s.labelsJSON(rp, []string{label})[0]
	event := "issues"
	if pull {
		event = "pull_request"
		payload["number"] = number
		payload["pull_request"] = s.pullJSON(rp, is, v, true) // pull_request events carry the full form
	} else {
		payload["issue"] = s.issueJSON(rp, is)
	}
	s.mu.Unlock()
	return s.Deliver(ctx, url, event, payload)
}

func (s *Server) pullLookup(repo string, number int) (*repo, *Issue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, is, err := s.lookupLocked(repo, number)
	if err != nil {
		return nil, nil, err
	}
	if is.Pull == nil {
		return nil, nil, fmt.Errorf("githubsim: %s #%d is not a pull request", repo, number)
	}
	return rp, is, nil
}
