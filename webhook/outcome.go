package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// isOutcomeEvent tells the events that say what became of pull requests
// rather than hold commands.
func isOutcomeEvent(event string) bool { return event == "pull_request" || event == "push" }

// pullEvent holds what intake reads of a pull_request or push delivery.
type pullEvent struct {
	envelope
	Number      int `json:"number"`
	PullRequest *struct {
		Merged bool `json:"merged"`
		Draft  bool `json:"draft"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
}

// interpretOutcome reads a pull_request or push delivery. A pull request
// opened, reopened, marked ready or pushed to is queued as a review that
// runs when the policy asks for it (autoreview.go). A merged pull
// request is queued whoever opened it: which pull requests are the agent's
// is in Redis, and the worker looks it up. A push is queued only when it
// reverts commits on the default branch, which DetectReverts finds
// from the payload alone. Everything else is ignored with its reason.
func (h *Handler) interpretOutcome(event, delivery string, body []byte) answer {
	var p pullEvent
	if err := json.Unmarshal(body, &p); err != nil {
		return invalid("payload is not a valid %s event: %v", event, err)
	}
	if event == "pull_request" && reviewAction(p.Action) {
		return autoReview(delivery, &p)
	}
	a := h.outcomeAnswer(event, delivery, body, p.Action, p.PullRequest != nil && p.PullRequest.Merged)
	if a.status != http.StatusAccepted {
		return a
	}
	if p.Repository == nil || !strings.Contains(p.Repository.FullName, "/") || !strings.HasPrefix(p.Repository.CloneURL, "http") {
		return invalid("%s without repository or clone_url", event)
	}
	if !p.fromApp() {
		return notFromApp(event)
	}
	e := a.event
	e.InstallationID, e.Repo, e.CloneURL = p.Installation.ID, p.Repository.FullName, p.Repository.CloneURL
	a.repo = e.Repo
	return a
}

// outcomeAnswer finds the merge and the reverts in a delivery. The cheap
// look at action and merged comes first, so that the many pull_request
// events that are no merge are not decoded twice.
func (h *Handler) outcomeAnswer(event, delivery string, body []byte, action string, merged bool) answer {
	e := &app.OutcomeEvent{ID: TaskID(delivery), Delivery: delivery, Event: event, ReceivedAt: time.Now().UTC()}
	if event == "pull_request" {
		switch {
		case action != "closed":
			return ignored("pull_request %s is no merge", action)
		case !merged:
			return ignored("pull_request closed without merging")
		}
		m, err := DetectMerge(event, body)
		if err != nil {
			return invalid("%s", app.ErrorMessage(err))
		}
		e.Merge = m
	}
	reverts, err := DetectReverts(event, body)
	if err != nil {
		return invalid("%s", app.ErrorMessage(err))
	}
	e.Reverts = reverts
	if e.Merge == nil && len(e.Reverts) == 0 {
		return ignored("push reverts nothing on the default branch")
	}
	return answer{status: http.StatusAccepted, outcome: "accepted", event: e, body: map[string]any{"event": e.ID}}
}

// enqueue queues what an accepted answer carries: an outcome event or a
// task.
func (h *Handler) enqueue(ctx context.Context, a answer) (duplicate bool, err error) {
	if a.event != nil {
		return h.cfg.Queue.EnqueueEvent(ctx, *a.event)
	}
	return h.cfg.Queue.Enqueue(ctx, a.task)
}
