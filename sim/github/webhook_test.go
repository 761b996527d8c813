package github_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app/apptest"
	githubsim "github.com/agentbot/agentbot/sim/github"
	"github.com/google/go-github/v62/github"
	"github.com/google/uuid"
)

func TestSignatureMatchesGitHubsVector(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(apptest.Fixtures(t), "github-signature-vector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Secret, Payload string
		Signature256    string `json:"signature_256"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if got := githubsim.Signature256(v.Secret, []byte(v.Payload)); got != v.Signature256 {
		t.Errorf("Signature256 = %s, want %s", got, v.Signature256)
	}
}

// delivery is one webhook a test receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver records deliveries and answers 202, as agentbot's intake does.
func receiver(t *testing.T) (*httptest.Server, <-chan delivery) {
	t.Helper()
	got := make(chan delivery, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got <- delivery{r.Header.Clone(), b}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"task":"T1"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// checkDelivery verifies GitHub's headers and signature and parses the
// event with go-github, as the intake will.
func checkDelivery(t *testing.T, w *world, d delivery, event string) any {
	t.Helper()
	secret := []byte(w.s.App().WebhookSecret)
	if err := github.ValidateSignature(d.header.Get("X-Hub-Signature-256"), d.body, secret); err != nil {
		t.Errorf("X-Hub-Signature-256: %v", err)
	}
	if err := github.ValidateSignature(d.header.Get("X-Hub-Signature"), d.body, secret); err != nil {
		t.Errorf("X-Hub-Signature: %v", err)
	}
	if got := d.header.Get("X-GitHub-Event"); got != event {
		t.Errorf("X-GitHub-Event %q, want %q", got, event)
	}
	if _, err := uuid.Parse(d.header.Get("X-GitHub-Delivery")); err != nil {
		t.Errorf("X-GitHub-Delivery: %v", err)
	}
	if d.header.Get("X-GitHub-Hook-ID") == "" || !strings.HasPrefix(d.header.Get("User-Agent"), "GitHub-Hookshot/") {
		t.Errorf("hook headers: %v", d.header)
	}
	ev, err := github.ParseWebHook(event, d.body)
	if err != nil {
		t.Fatalf("parse %s: %v", event, err)
	}
	return ev
}

// fixture reads one of GitHub's real payloads.
func fixture(t *testing.T, event, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(apptest.Fixtures(t), "github-webhooks", event, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameShape checks that every field of GitHub's real payload, at any
// depth, is in ours too.
func sameShape(t *testing.T, fixture, ours []byte) {
	t.Helper()
	var want, got any
	if err := json.Unmarshal(fixture, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ours, &got); err != nil {
		t.Fatal(err)
	}
	for _, f := range missingFields("", want, got) {
		t.Errorf("field %s of GitHub's payload is missing", f)
	}
}

func TestDeliverIssueComment(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srv, got := receiver(t)
	n, err := w.s.AddIssue(full, "octocat", "Widgets crash", "")
	if err != nil {
		t.Fatal(err)
	}
	id, resp, err := w.s.DeliverIssueComment(context.Background(), srv.URL, full, n, "octocat", "/agent fix")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("answer %d", resp.StatusCode)
	}
	d := <-got
	ev := checkDelivery(t, w, d, "issue_comment").(*github.IssueCommentEvent)
	if ev.GetAction() != "created" || ev.GetComment().GetID() != id || ev.GetComment().GetBody() != "/agent fix" ||
		ev.GetIssue().GetNumber() != n || ev.GetRepo().GetFullName() != full || ev.GetInstallation().GetID() != w.install ||
		ev.GetSender().GetLogin() != "octocat" || ev.GetRepo().GetCloneURL() != w.s.URL()+"/"+full+".git" {
		t.Errorf("event %+v", ev)
	}
	if cs := w.s.Comments(full, n); len(cs) != 1 || cs[0].ID != id {
		t.Errorf("comment not stored: %+v", cs)
	}
	sameShape(t, fixture(t, "issue_comment", "created.with-organization.payload.json"), d.body)
}

func TestDeliverReviewFlows(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srv, got := receiver(t)
	ctx := context.Background()
	w.pushBranch(t, full, "feature", "f.go", "package f\n")
	n, err := w.s.AddPullRequest(full, githubsim.PullOptions{Author: "octocat", Title: "Feature", Head: "feature"})
	if err != nil {
		t.Fatal(err)
	}

	id, _, err := w.s.DeliverReviewComment(ctx, srv.URL, full, n, "octocat", "f.go", 1, "/agent rename this")
	if err != nil {
		t.Fatal(err)
	}
	d := <-got
	rc := checkDelivery(t, w, d, "pull_request_review_comment").(*github.PullRequestReviewCommentEvent)
	if rc.GetComment().GetID() != id || rc.GetComment().GetPath() != "f.go" || rc.GetPullRequest().GetNumber() != n ||
		rc.GetPullRequest().GetHead().GetRef() != "feature" {
		t.Errorf("review comment event %+v", rc)
	}
	sameShape(t, fixture(t, "pull_request_review_comment", "created.payload.json"), d.body)

	if _, err := w.s.DeliverReview(ctx, srv.URL, full, n, "octocat", "CHANGES_REQUESTED", "/agent add tests"); err != nil {
		t.Fatal(err)
	}
	d = <-got
	sameShape(t, fixture(t, "pull_request_review", "submitted.with-organization.payload.json"), d.body)
	rv := checkDelivery(t, w, d, "pull_request_review").(*github.PullRequestReviewEvent)
	if rv.GetAction() != "submitted" || rv.GetReview().GetState() != "changes_requested" || rv.GetReview().GetBody() != "/agent add tests" {
		t.Errorf("review event %+v", rv)
	}

	if _, err := w.s.DeliverLabeled(ctx, srv.URL, full, n, "agent:fix", "octocat"); err != nil {
		t.Fatal(err)
	}
	d = <-got
	sameShape(t, fixture(t, "pull_request", "labeled.with-organization.payload.json"), d.body)
	pl := checkDelivery(t, w, d, "pull_request").(*github.PullRequestEvent)
	if pl.GetAction() != "labeled" || pl.GetLabel().GetName() != "agent:fix" || pl.GetNumber() != n {
		t.Errorf("labeled event %+v", pl)
	}
	issue, err := w.s.AddIssue(full, "octocat", "bug", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.DeliverLabeled(ctx, srv.URL, full, issue, "agent:fix", "octocat"); err != nil {
		t.Fatal(err)
	}
	d = <-got
	sameShape(t, fixture(t, "issues", "labeled.with-organization.payload.json"), d.body)
	il := checkDelivery(t, w, d, "issues").(*github.IssuesEvent)
	if il.GetAction() != "labeled" || il.GetIssue().GetNumber() != issue || len(il.GetIssue().Labels) != 1 {
		t.Errorf("issues labeled event %+v", il)
	}

	// The App answers in the thread and reacts, as agentbot does.
	c := w.client(t, nil, nil)
	if _, _, err := c.PullRequests.CreateCommentInReplyTo(ctx, owner, name, n, "On it.", id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Reactions.CreatePullRequestCommentReaction(ctx, owner, name, id, "eyes"); err != nil {
		t.Fatal(err)
	}
	rcs := w.s.ReviewComments(full, n)
	if len(rcs) != 2 || rcs[1].InReplyTo != id || rcs[1].Author != w.s.App().BotLogin || len(rcs[0].Reactions) != 1 {
		t.Errorf("review comments %+v", rcs)
	}
}

// The App's own writes come back as webhooks, as on GitHub, so that a
// test sees whether agentbot ignores its echo.
func TestOwnWritesAreDelivered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	srv, got := receiver(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	n, err := w.s.AddIssue(full, "octocat", "t", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.CreateComment(ctx, owner, name, n, &github.IssueComment{Body: github.String("silent")}); err != nil {
		t.Fatal(err)
	}
	w.s.SetWebhookURL(srv.URL)
	cm, _, err := c.Issues.CreateComment(ctx, owner, name, n, &github.IssueComment{Body: github.String("Queued.")})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Issues.EditComment(ctx, owner, name, cm.GetID(), &github.IssueComment{Body: github.String("Running.")}); err != nil {
		t.Fatal(err)
	}
	w.pushBranch(t, full, "agent/1-x", "x.go", "package x\n")
	if _, _, err := c.PullRequests.Create(ctx, owner, name, &github.NewPullRequest{Title: github.String("X"), Head: github.String("agent/1-x"), Base: github.String("main")}); err != nil {
		t.Fatal(err)
	}
	bot := w.s.App().BotLogin

	d := <-got
	sameShape(t, fixture(t, "issue_comment", "created.with-organization.payload.json"), d.body)
	created := checkDelivery(t, w, d, "issue_comment").(*github.IssueCommentEvent)
	if created.GetAction() != "created" || created.GetComment().GetBody() != "Queued." || created.GetSender().GetLogin() != bot ||
		created.GetSender().GetType() != "Bot" || !strings.Contains(string(d.body), `"performed_via_github_app":{`) {
		t.Errorf("created event %+v", created)
	}
	d = <-got
	sameShape(t, fixture(t, "issue_comment", "edited.with-organization.payload.json"), d.body)
	edited := checkDelivery(t, w, d, "issue_comment").(*github.IssueCommentEvent)
	if edited.GetAction() != "edited" || edited.GetComment().GetBody() != "Running." || edited.GetChanges().GetBody().GetFrom() != "Queued." {
		t.Errorf("edited event %+v", edited)
	}
	d = <-got
	sameShape(t, fixture(t, "pull_request", "opened.with-organization.payload.json"), d.body)
	opened := checkDelivery(t, w, d, "pull_request").(*github.PullRequestEvent)
	if opened.GetAction() != "opened" || opened.GetPullRequest().GetUser().GetLogin() != bot || opened.GetNumber() != 2 {
		t.Errorf("opened event %+v", opened)
	}

	// A push to the pull request's branch synchronizes it.
	w.pushBranch(t, full, "agent/1-x", "y.go", "package x\n")
	d = <-got
	sameShape(t, fixture(t, "pull_request", "synchronize.payload.json"), d.body)
	synced := checkDelivery(t, w, d, "pull_request").(*github.PullRequestEvent)
	head := w.mustBranchSHA(t, "agent/1-x")
	if synced.GetAction() != "synchronize" || synced.GetAfter() != head || synced.GetBefore() != opened.GetPullRequest().GetHead().GetSHA() ||
		synced.GetPullRequest().GetHead().GetSHA() != head {
		t.Errorf("synchronize event %+v", synced)
	}

	// The receiver hands each delivery over before answering it, so the
	// log may still be one short here.
	var ds []githubsim.Delivery
	for range 100 {
		if ds = w.s.Deliveries(); len(ds) == 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ds) != 4 || ds[0].Status != http.StatusAccepted || ds[1].Action != "edited" || ds[2].Event != "pull_request" || ds[3].Action != "synchronize" {
		t.Errorf("deliveries %+v", ds)
	}
}
