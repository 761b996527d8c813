package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// isCIEvent tells the events by which the repository's CI reports a
// finished check.
func isCIEvent(event string) bool {
	return event == "check_run" || event == "check_suite" || event == "workflow_run"
}

// ciObject holds what intake reads of a check run, check suite or
// workflow run.
type ciObject struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	HeadSHA    string `json:"head_sha"`
	Status     string `json:"status"`
	Conclusion string `json:"conclusion"`
	App        *struct {
		ID int64 `json:"id"`
	} `json:"app"`
	PullRequests []struct {
		Number int `json:"number"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_requests"`
}

// interpretCI reads a check_run, check_suite or workflow_run delivery. A
// completed, failed check on the head of a pull request is queued as a
// fix-ci task on that pull request; whether the pull request is the
// agent's, whether the check is another App's, whether it fails on the
// base too and how many follow-ups the pull request has had are the
// worker's to find out, since they take the policy and GitHub's API.
func (h *Handler) interpretCI(event, delivery string, body []byte) answer {
	var p struct {
		envelope
		CheckRun    *ciObject `json:"check_run"`
		CheckSuite  *ciObject `json:"check_suite"`
		WorkflowRun *ciObject `json:"workflow_run"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return invalid("payload is not a valid %s event: %v", event, err)
	}
	a := ciAnswer(event, p.Action, map[string]*ciObject{
		"check_run": p.CheckRun, "check_suite": p.CheckSuite, "workflow_run": p.WorkflowRun}[event])
	a.repo = p.repo()
	if a.status != http.StatusAccepted {
		return a
	}
	if p.Repository == nil || !strings.Contains(p.Repository.FullName, "/") {
		return invalid("%s without repository", event)
	}
	if !p.fromApp() {
		return notFromApp(event)
	}
	if p.Sender == nil || p.Sender.Login == "" {
		return invalid("%s without sender", event)
	}
	t := &a.task
	t.ID, t.Delivery, t.Event, t.ReceivedAt = TaskID(delivery), delivery, event, time.Now().UTC()
	t.Repo, t.InstallationID, t.Requester = p.Repository.FullName, p.Installation.ID, p.Sender.Login
	a.body = map[string]any{"task": t.ID}
	return a
}

// ciAnswer decides on a CI event from its action and object alone.
func ciAnswer(event, action string, o *ciObject) answer {
	if action != "completed" {
		return ignored("%s %s is not a finished check", event, action)
	}
	if o == nil {
		return invalid("%s without its %s", event, event)
	}
	if !app.CIFailed(o.Conclusion) {
		return ignored("%s concluded %q, not a failure", event, o.Conclusion)
	}
	if o.HeadSHA == "" {
		return invalid("%s without head_sha", event)
	}
	// GitHub lists the pull requests whose head is the checked commit;
	// a fork's pull request is never listed, and agentbot pushes only to
	// its own branches anyway.
	number := 0
	for _, pr := range o.PullRequests {
		if pr.Head.SHA == o.HeadSHA || number == 0 {
			number = pr.Number
		}
	}
	if number <= 0 {
		return ignored("%s failed on %s, which heads no pull request of the repository", event, o.HeadSHA)
	}
	ci := &app.CIEvent{Kind: event, ID: o.ID, Name: o.Name, HeadSHA: o.HeadSHA}
	if o.App != nil {
		ci.AppID = o.App.ID
	}
	t := app.Task{Number: number, IsPR: true, Verb: app.VerbFixCI, CI: ci}
	return answer{status: http.StatusAccepted, outcome: "accepted", task: t}
}
