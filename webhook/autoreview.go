package webhook

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// reviewAction reports whether a pull_request action may start a review
// by itself: the pull request is new, open again, ready for review, or
// has new commits.
func reviewAction(action string) bool {
	switch action {
	case "opened", "reopened", "ready_for_review", "synchronize":
		return true
	}
	return false
}

// ReviewTaskID is the ID of the automatic review of repo#number at head:
// every event about the same head maps to the same task, so the head is
// reviewed once however many events name it (opened, then ready for
// review) and however often they are delivered.
func ReviewTaskID(repo string, number int, head string) string {
	return TaskID(fmt.Sprintf("review %s#%d@%s", repo, number, head))
}

// autoReview makes the review task a pull_request event may start. Whether
// it runs is the worker's to decide: review.auto, drafts, paths and
// trigger.allow_forks are the default branch's policy, which intake does
// not load. A bot's events start none: agentbot's own pull requests and
// pushes among them, and whatever another App automates.
func autoReview(delivery string, p *pullEvent) answer {
	pr := p.PullRequest
	switch {
	case pr == nil || pr.Head.SHA == "" || p.Number <= 0:
		return invalid("pull_request %s without pull_request, its number or its head's sha", p.Action)
	case p.Repository == nil || !strings.Contains(p.Repository.FullName, "/"):
		return invalid("pull_request without repository")
	case p.Sender == nil || p.Sender.Login == "":
		return invalid("pull_request without sender")
	case p.Sender.Type == "Bot":
		return ignored("pull_request %s by the bot %s starts no review", p.Action, p.Sender.Login)
	case !p.fromApp():
		return notFromApp("pull_request")
	}
	repo := p.Repository.FullName
	t := app.Task{
		ID: ReviewTaskID(repo, p.Number, pr.Head.SHA), Delivery: delivery, Event: "pull_request", ReceivedAt: time.Now().UTC(),
		InstallationID: p.Installation.ID, Repo: repo, Number: p.Number, IsPR: true, Verb: app.VerbReview,
		Requester: p.Sender.Login, RequesterID: p.Sender.ID,
		Auto: &app.AutoReview{Action: p.Action, HeadSHA: pr.Head.SHA, Draft: pr.Draft},
	}
	return answer{status: http.StatusAccepted, outcome: "accepted", repo: repo, task: t, body: map[string]any{"task": t.ID}}
}
