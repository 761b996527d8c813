package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// command records a comment by login on the world's issue as intake
// would: a task of verb with the comment's id.
func (w *world) command(t *testing.T, id, login string, verb app.Verb) app.Task {
	t.Helper()
	return w.commandOn(t, id, w.issue, login, verb, nil)
}

// botComments are the comments the App wrote on the world's issue.
func (w *world) botComments() []githubsim.Comment {
	var out []githubsim.Comment
	for _, c := range w.sim.Comments(repo, w.issue) {
		if c.Author == w.sim.App().BotLogin {
			out = append(out, c)
		}
	}
	return out
}

// reactions are the App's reactions on the comment id.
func (w *world) reactions(id int64) []string {
	var out []string
	for _, c := range w.sim.Comments(repo, w.issue) {
		if c.ID != id {
			continue
		}
		for _, r := range c.Reactions {
			if r.User == w.sim.App().BotLogin {
				out = append(out, r.Content)
			}
		}
	}
	return out
}

func TestOutsidersStatusIsRefusedWithoutTheIssuesTasks(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, quickPolicy, demoScript(t))
	ctx := t.Context()
	if err := w.sim.SetPermission(repo, "mallory", "read"); err != nil {
		t.Fatal(err)
	}
	w.command(t, "FIX", "ada", app.VerbFix) // asked, never run: it stays queued
	for _, verb := range []app.Verb{app.VerbStatus, app.VerbHelp} {
		t.Run(string(verb), func(t *testing.T) {
			id := "OUT-" + string(verb)
			// A sender of their own, so that the refusal is answered.
			login := "mallory-" + string(verb)
			if err := w.sim.SetPermission(repo, login, "read"); err != nil {
				t.Fatal(err)
			}
			if err := w.runner.ProcessTask(ctx, w.command(t, id, login, verb)); err != nil {
				t.Fatal(err)
			}
			if rec := w.store.record(id); rec.State != app.StateRefused {
				t.Errorf("%s by an outsider ended %s; want refused", verb, rec.State)
			}
			reply := w.status(id)
			if !strings.Contains(reply, "was not run") || !strings.Contains(reply, "@"+login+" has the read role") {
				t.Errorf("reply is no refusal:\n%s", reply)
			}
			for _, leak := range []string{"FIX", "Tasks on", "who may ask", "check **fixed**"} {
				if strings.Contains(reply, leak) {
					t.Errorf("the refusal tells an outsider %q:\n%s", leak, reply)
				}
			}
		})
	}
	// Someone who may command still hears the status.
	if err := w.runner.ProcessTask(ctx, w.command(t, "ADA-STATUS", "ada", app.VerbStatus)); err != nil {
		t.Fatal(err)
	}
	if reply := w.status("ADA-STATUS"); !strings.Contains(reply, "`FIX` fix by @ada: **queued**") {
		t.Errorf("status for a collaborator:\n%s", reply)
	}
}

func TestOutsiderIsAnsweredOneRefusalPerIssueAndHour(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, quickPolicy, demoScript(t))
	ctx := t.Context()
	for _, login := range []string{"mallory", "eve"} {
		if err := w.sim.SetPermission(repo, login, "read"); err != nil {
			t.Fatal(err)
		}
	}
	first, second := w.command(t, "M1", "mallory", app.VerbFix), w.command(t, "M2", "mallory", app.VerbStatus)
	for _, tk := range []app.Task{first, second} {
		if err := w.runner.ProcessTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
		if rec := w.store.record(tk.ID); rec.State != app.StateRefused {
			t.Errorf("task %s ended %s; want refused", tk.ID, rec.State)
		}
	}
	bot := w.botComments()
	if len(bot) != 1 || !strings.Contains(bot[0].Body, "agentbot:task=M1") || !strings.Contains(bot[0].Body, "@mallory") {
		t.Fatalf("the App wrote %d comments; want one refusal, for M1: %+v", len(bot), bot)
	}
	if r := w.reactions(second.CommentID); len(r) != 0 {
		t.Errorf("the second refused comment got reactions %v; want none", r)
	}
	// The second task is done: run again, it still says nothing.
	if err := w.runner.ProcessTask(ctx, second); err != nil {
		t.Fatal(err)
	}
	// Another outsider is told once too.
	if err := w.runner.ProcessTask(ctx, w.command(t, "E1", "eve", app.VerbFix)); err != nil {
		t.Fatal(err)
	}
	if bot := w.botComments(); len(bot) != 2 || !strings.Contains(bot[1].Body, "@eve") {
		t.Errorf("after eve's command the App wrote %+v; want a refusal to eve as well", bot)
	}
}

// TestCollaboratorIsAlwaysAnsweredWhyNotApprover: the limit is for people
// who may not command at all; a collaborator refused an approval hears why
// each time.
func TestCollaboratorIsAlwaysAnsweredWhyNotApprover(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, quickPolicy, demoScript(t))
	ctx := t.Context()
	for _, id := range []string{"A1", "A2"} {
		if err := w.runner.ProcessTask(ctx, w.command(t, id, "ada", app.VerbApprove)); err != nil {
			t.Fatal(err)
		}
		if reply := w.status(id); !strings.Contains(reply, "only approvers may approve or deny") {
			t.Errorf("reply to %s:\n%s", id, reply)
		}
	}
}

// TestStatusListsTheNewestTasks: a flood of commands on an issue does not
// make its status comment grow past what GitHub takes.
func TestStatusListsTheNewestTasks(t *testing.T) {
	t.Parallel()
	w := newWorldWithoutSandboxes(t, quickPolicy, demoScript(t))
	ctx := t.Context()
	for i := range 25 {
		w.command(t, fmt.Sprintf("F%02d", i), "ada", app.VerbFix)
	}
	if err := w.runner.ProcessTask(ctx, w.command(t, "S", "ada", app.VerbStatus)); err != nil {
		t.Fatal(err)
	}
	reply := w.status("S")
	if n := strings.Count(reply, "fix by @ada"); n != 20 {
		t.Errorf("status lists %d tasks; want 20:\n%s", n, reply)
	}
	if !strings.Contains(reply, "`F24`") || strings.Contains(reply, "`F04`") || !strings.Contains(reply, "and 5 older") {
		t.Errorf("status does not list the newest tasks and count the rest:\n%s", reply)
	}
}
