package webhook

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// envelope holds what every webhook payload intake reads carries: the
// action, the App installation, the repository and the sender.
type envelope struct {
	Action       string `json:"action"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository *struct {
		FullName string `json:"full_name"`
		CloneURL string `json:"clone_url"`
	} `json:"repository"`
	Sender *struct {
		Login string `json:"login"`
		ID    int64  `json:"id"`
		Type  string `json:"type"` // "User", "Bot" or "Organization"
	} `json:"sender"`
}

// repo is the repository's full name, or empty when there is none.
func (e *envelope) repo() string {
	if e.Repository == nil {
		return ""
	}
	return e.Repository.FullName
}

// fromApp reports whether the delivery names an installation, as only the
// GitHub App's deliveries do; a task needs it for its token.
func (e *envelope) fromApp() bool { return e.Installation != nil && e.Installation.ID > 0 }

// notFromApp is the answer to a delivery of event without an installation.
func notFromApp(event string) answer {
	return invalid("%s without installation: deliveries must come from the GitHub App", event)
}

// payload holds the fields of GitHub's webhook payloads that intake reads;
// decoding only these keeps the request path fast.
type payload struct {
	envelope
	Issue *struct {
		Number      int       `json:"number"`
		PullRequest *struct{} `json:"pull_request"` // present when the issue is a pull request
	} `json:"issue"`
	PullRequest *struct {
		Number int `json:"number"`
	} `json:"pull_request"`
	Comment *struct {
		ID           int64  `json:"id"`
		Body         string `json:"body"`
		Path         string `json:"path"`
		Line         *int   `json:"line"`
		OriginalLine *int   `json:"original_line"`
		DiffHunk     string `json:"diff_hunk"`
		InReplyTo    int64  `json:"in_reply_to_id"` // replies only
	} `json:"comment"`
	Review *struct {
		ID    int64  `json:"id"`
		Body  string `json:"body"`
		State string `json:"state"` // lower case in webhooks: changes_requested, approved, commented
	} `json:"review"`
	Label *struct {
		Name string `json:"name"`
	} `json:"label"`
}

func ignored(format string, args ...any) answer {
	reason := fmt.Sprintf(format, args...)
	return answer{status: http.StatusOK, outcome: "ignored", reason: reason, body: map[string]any{"ignored": reason}}
}

func invalid(format string, args ...any) answer {
	return fail(http.StatusBadRequest, "invalid", fmt.Sprintf(format, args...), nil)
}

// interpret reads a verified delivery. Its answer is 202 with the task for a
// command, 200 for ping and for what is ignored, 400 for a payload that
// lacks what its event needs.
func (h *Handler) interpret(event, delivery string, body []byte) answer {
	if event == "ping" {
		return answer{status: http.StatusOK, outcome: "ping", body: map[string]any{"pong": true}}
	}
	if isCIEvent(event) {
		return h.interpretCI(event, delivery, body)
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return invalid("payload is not a valid %s event: %v", eventLabel(event), err)
	}
	a := h.classify(event, delivery, &p)
	a.repo = p.repo()
	return a
}

// classify finds the command in a decoded payload, if there is one.
func (h *Handler) classify(event, delivery string, p *payload) answer {
	t := app.Task{ID: TaskID(delivery), Delivery: delivery, Event: event, ReceivedAt: time.Now().UTC()}
	var text string // the text that may hold a command
	switch event {
	case "issue_comment":
		if p.Action != "created" {
			return ignored("issue_comment %s is not a command", p.Action)
		}
		if p.Issue == nil || p.Comment == nil {
			return invalid("issue_comment without issue or comment")
		}
		t.Number, t.IsPR, t.CommentID, text = p.Issue.Number, p.Issue.PullRequest != nil, p.Comment.ID, p.Comment.Body
	case "pull_request_review_comment":
		if p.Action != "created" {
			return ignored("pull_request_review_comment %s is not a command", p.Action)
		}
		if p.PullRequest == nil || p.Comment == nil {
			return invalid("pull_request_review_comment without pull_request or comment")
		}
		c := p.Comment
		line := c.Line
		if line == nil {
			line = c.OriginalLine // the comment is on an outdated diff
		}
		t.Number, t.IsPR, t.CommentID, text = p.PullRequest.Number, true, c.ID, c.Body
		t.ReviewComment = &app.ReviewComment{ID: c.ID, Path: c.Path, DiffHunk: c.DiffHunk, InReplyTo: c.InReplyTo}
		if line != nil {
			t.ReviewComment.Line = *line
		}
	case "pull_request_review":
		if p.Action != "submitted" {
			return ignored("pull_request_review %s is not a command", p.Action)
		}
		if p.PullRequest == nil || p.Review == nil {
			return invalid("pull_request_review without pull_request or review")
		}
		t.Number, t.IsPR, t.CommentID, text = p.PullRequest.Number, true, p.Review.ID, p.Review.Body
		if t.Review = reviewFollowUp(p.Review.ID, p.Review.State, text, h.cfg.Command); t.Review != nil {
			// A review is no issue comment: there is nothing to react to.
			t.CommentID = 0
			if t.Review.Implicit {
				t.Verb, t.Instructions = app.VerbFix, reviewInstructions(text)
			}
		}
	case "issues":
		if p.Action != "labeled" {
			return ignored("issues %s is not a command", p.Action)
		}
		if p.Issue == nil || p.Label == nil {
			return invalid("issues labeled without issue or label")
		}
		// Which label triggers is the repository's policy's to say, and
		// intake loads no policy: the worker decides.
		t.Number, t.IsPR, t.Verb, t.Label = p.Issue.Number, p.Issue.PullRequest != nil, app.VerbFix, p.Label.Name
	default:
		return ignored("%s events are not commands", eventLabel(event))
	}

	if p.Sender == nil || p.Sender.Login == "" {
		return invalid("%s without sender", event)
	}
	if p.Sender.Type == "Bot" {
		// agentbot's own comments quote commands; answering a bot could loop.
		return ignored("sender %s is a bot", p.Sender.Login)
	}
	if t.Verb == "" {
		cmd := app.ParseCommand(text, h.cfg.Command)
		switch cmd.Action {
		case app.Ignore:
			return ignored("%s", cmd.Reason)
		case app.Reply:
			// A help task: the worker answers with the reason first.
			t.Verb, t.Instructions = app.VerbHelp, cmd.Reason
		default:
			t.Verb, t.Instructions = cmd.Verb, cmd.Instructions
		}
	}
	if p.Repository == nil || !strings.Contains(p.Repository.FullName, "/") || t.Number <= 0 {
		return invalid("%s without repository or issue number", event)
	}
	if !p.fromApp() {
		return notFromApp(event)
	}
	t.Repo, t.InstallationID, t.Requester, t.RequesterID = p.Repository.FullName, p.Installation.ID, p.Sender.Login, p.Sender.ID
	return answer{status: http.StatusAccepted, outcome: "accepted", task: t, body: map[string]any{"task": t.ID}}
}
