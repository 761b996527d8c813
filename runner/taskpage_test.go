package runner_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
)

// pageLinks links every task's page under one address, with a
// parenthesis that would end a Markdown link.
type pageLinks struct{}

func (pageLinks) URL(t app.Task) string { return "https://bot.example/(x)/live/" + t.ID + "/tok" }

// TestStatusCommentLinksTheTaskPage: a task that works links its live
// page from its status comment; one answered at once does not.
func TestStatusCommentLinksTheTaskPage(t *testing.T) {
	t.Parallel()
	w := buildWorld(t, quickPolicy, demoScript(t), noSandboxes{t}, func(c *runner.Config) { c.Pages = pageLinks{} })
	ctx := t.Context()
	if err := w.sim.SetPermission(repo, "mallory", "read"); err != nil {
		t.Fatal(err)
	}
	// Refused at admission: the page says why, as the comment does.
	if err := w.runner.ProcessTask(ctx, w.command(t, "FIX", "mallory", app.VerbFix)); err != nil {
		t.Fatal(err)
	}
	if body := w.status("FIX"); !strings.Contains(body, "[Follow this task](https://bot.example/%28x%29/live/FIX/tok)") {
		t.Errorf("the fix's status comment does not link its page:\n%s", body)
	}
	if err := w.runner.ProcessTask(ctx, w.command(t, "S", "ada", app.VerbStatus)); err != nil {
		t.Fatal(err)
	}
	if body := w.status("S"); body == "" || strings.Contains(body, "Follow this task") {
		t.Errorf("the status answer links a page:\n%s", body)
	}
}
