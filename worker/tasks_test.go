package worker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/worker"
)

// TestIssueTasksOutlastAFlood: 2,000 commands on other issues, received
// after an issue's tasks, leave those tasks where stop (a running fix),
// approve (a paused one) and retry (a failed one) look for them.
func TestIssueTasksOutlastAFlood(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := testRedis(t)
	c, store := queue.NewClient(rdb), queue.NewStore(rdb)
	t0 := time.Now().Add(-time.Hour).UTC()
	task := func(id string, number int, at time.Time) app.Task {
		return app.Task{ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: 1, Repo: "acme/stats",
			Number: number, Verb: app.VerbFix, Requester: "ada", ReceivedAt: at}
	}
	states := map[string]app.State{"failed": app.StateFailed, "paused": app.StateAwaitingApproval, "running": app.StateRunning}
	for i, id := range []string{"failed", "paused", "running"} {
		if _, err := c.Enqueue(ctx, task(id, 1, t0.Add(time.Duration(i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
		if err := store.SetState(ctx, id, states[id], ""); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2000 {
		f := task(fmt.Sprintf("flood-%d", i), 100+i%50, t0.Add(time.Duration(10+i)*time.Millisecond))
		f.Requester = "mallory"
		if _, err := c.Enqueue(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := worker.Tasks{Store: store}.OnIssue(ctx, "acme/stats", 1)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ts := range got {
		ids = append(ids, ts.ID)
		if ts.State != states[ts.ID] {
			t.Errorf("task %s is %s; want %s", ts.ID, ts.State, states[ts.ID])
		}
	}
	if want := []string{"running", "paused", "failed"}; !slices.Equal(ids, want) {
		t.Errorf("tasks on the issue = %v; want %v, newest first", ids, want)
	}
}
