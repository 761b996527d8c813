package runner

import (
	"context"
	"strings"

	"github.com/agentbot/agentbot/app"
)

// TaskPages makes the link to a task's live page, which its status
// comment shows; cmd passes taskpage.Links.
type TaskPages interface {
	URL(t app.Task) string
}

// pageLinked is a status comment that ends with the link to its task's
// live page.
type pageLinked struct {
	StatusComment
	url string
}

func (s pageLinked) Set(ctx context.Context, body string) error {
	return s.StatusComment.Set(ctx, body+"\n\n📺 [Follow this task]("+s.url+"): every step, the diff so far and what it spent, live while it runs.\n")
}

// linkPage returns t's status comment c, with the link to t's page when
// pages are served and t does work worth following: the control verbs
// (stop, status, help, approve, deny) answer at once.
func linkPage(c StatusComment, pages TaskPages, t app.Task) StatusComment {
	switch t.Verb {
	case app.VerbStop, app.VerbStatus, app.VerbHelp, app.VerbApprove, app.VerbDeny:
		return c
	}
	if pages == nil {
		return c
	}
	// Parentheses would end the Markdown link early.
	url := strings.NewReplacer("(", "%28", ")", "%29").Replace(pages.URL(t))
	return pageLinked{StatusComment: c, url: url}
}
