package queue

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

// TestIssueIndexOutlastsAFlood: 2,000 tasks asked after a real one, on
// other issues and on the same one, leave it in reach of stop, approve and
// retry, which find an issue's tasks through TasksOfIssue.
func TestIssueIndexOutlastsAFlood(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	c, store := NewClient(rdb), NewStore(rdb)

	t0 := time.Now().Add(-time.Hour)
	real := sampleTask("real", t0)
	if _, err := c.Enqueue(ctx, real); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		f := sampleTask(fmt.Sprintf("flood-%d", i), t0.Add(time.Duration(i+1)*time.Millisecond))
		f.Requester = "mallory"
		if i%2 == 0 {
			f.Number = 1000 + i // elsewhere
		} else {
			f.Repo = "OCTO/Hello" // the same issue, spelled as GitHub may
		}
		if _, err := c.Enqueue(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := store.TasksOfIssue(ctx, "octo/hello", real.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1001 {
		t.Errorf("TasksOfIssue found %d tasks; want the real one and the 1,000 on its issue", len(recs))
	}
	if !slices.Contains(ids(recs), "real") {
		t.Fatal("the real task is out of reach of its issue")
	}
	if last := recs[len(recs)-1]; last.ID != "real" || last.Requester != "alice" {
		t.Errorf("oldest task = %s by %s; want the real one by alice, newest first", last.ID, last.Requester)
	}
	if recs[0].ID != "flood-1999" {
		t.Errorf("newest task = %s; want flood-1999", recs[0].ID)
	}
	other, err := store.TasksOfIssue(ctx, "octo/hello", 1000)
	if err != nil || !slices.Equal(ids(other), []string{"flood-0"}) {
		t.Errorf("tasks of another issue = %v, %v; want flood-0 only", ids(other), err)
	}
	none, err := store.TasksOfIssue(ctx, "octo/nothing", 1)
	if err != nil || len(none) != 0 {
		t.Errorf("tasks of an issue without any = %v, %v", ids(none), err)
	}
}

func TestIssueIndexLivesWithItsRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	const ttl = time.Hour
	c, store := NewClient(rdb).WithRetention(ttl), NewStore(rdb).WithRetention(ttl)
	a, b := sampleTask("a", time.Now()), sampleTask("b", time.Now().Add(time.Second))
	for _, tk := range []app.Task{a, b} {
		if _, err := c.Enqueue(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	key := issueKey(a.Repo, a.Number)
	pttl := func() time.Duration {
		t.Helper()
		d, err := rdb.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := pttl(); d <= ttl-time.Minute || d > ttl {
		t.Errorf("issue index's TTL = %s; want the retention, %s", d, ttl)
	}

	// A change to a task renews the index with its record: a task that
	// runs or waits for approval long stays in reach.
	if err := rdb.PExpire(ctx, key, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := store.SetState(ctx, "a", app.StateAwaitingApproval, "waiting"); err != nil {
		t.Fatal(err)
	}
	if d := pttl(); d <= ttl-time.Minute {
		t.Errorf("issue index's TTL after a change = %s; want %s again", d, ttl)
	}

	// An expired record leaves the index when the issue's tasks are read.
	if err := rdb.Del(ctx, taskKey("b")).Err(); err != nil {
		t.Fatal(err)
	}
	recs, err := store.TasksOfIssue(ctx, a.Repo, a.Number)
	if err != nil || !slices.Equal(ids(recs), []string{"a"}) {
		t.Fatalf("TasksOfIssue = %v, %v; want a", ids(recs), err)
	}
	if _, err := rdb.ZScore(ctx, key, "b").Result(); err != redis.Nil {
		t.Errorf("the expired task is still indexed (%v)", err)
	}

	// Kept forever, the index is kept too.
	forever := sampleTask("forever", time.Now())
	forever.Number = 9
	if _, err := NewClient(rdb).WithRetention(0).Enqueue(ctx, forever); err != nil {
		t.Fatal(err)
	}
	if d, err := rdb.PTTL(ctx, issueKey(forever.Repo, 9)).Result(); err != nil || d != -1 {
		t.Errorf("index of records kept forever has PTTL %s (%v); want none", d, err)
	}
}

func TestRunStateOperations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	store := NewStore(rdb)

	if by, err := store.StopRequested(ctx, "t1"); err != nil || by != "" {
		t.Errorf("StopRequested before any = %q, %v", by, err)
	}
	if err := store.RequestStop(ctx, "t1", ""); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("RequestStop without a login = %v; want EInvalid", err)
	}
	if err := store.RequestStop(ctx, "t1", "alice"); err != nil {
		t.Fatal(err)
	}
	if by, err := store.StopRequested(ctx, "t1"); err != nil || by != "alice" {
		t.Errorf("StopRequested = %q, %v; want alice", by, err)
	}
	if by, _ := store.StopRequested(ctx, "t2"); by != "" {
		t.Errorf("another task is stopped by %q", by)
	}

	for _, op := range []struct {
		name string
		save func(id string, b []byte) error
		load func(id string) ([]byte, error)
	}{
		{"progress", func(id string, b []byte) error { return store.SaveProgress(ctx, id, b) }, func(id string) ([]byte, error) { return store.LoadProgress(ctx, id) }},
		{"decision", func(id string, b []byte) error { return store.RecordDecision(ctx, id, b) }, func(id string) ([]byte, error) { return store.Decision(ctx, id) }},
		{"loop state", func(id string, b []byte) error { return store.SaveState(ctx, id, b) }, func(id string) ([]byte, error) { return store.LoadState(ctx, id) }},
	} {
		if b, err := op.load("t1"); err != nil || b != nil {
			t.Errorf("%s before any = %q, %v; want nil", op.name, b, err)
		}
		if err := op.save("t1", []byte(op.name+" 1")); err != nil {
			t.Fatal(err)
		}
		if err := op.save("t1", []byte(op.name+" 2")); err != nil {
			t.Fatal(err)
		}
		if b, err := op.load("t1"); err != nil || string(b) != op.name+" 2" {
			t.Errorf("%s = %q, %v; want the last saved", op.name, b, err)
		}
	}
	// Each is its own: none reads another's.
	if b, _ := store.LoadState(ctx, "t1"); string(b) != "loop state 2" {
		t.Errorf("loop state = %q", b)
	}
}

func TestClaimRefusalOncePerIssueAndSenderPerWindow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	store := NewStore(rdb)
	claim := func(repo string, n int, who, task string) bool {
		t.Helper()
		ok, err := store.ClaimRefusal(ctx, repo, n, who, task)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !claim("octo/hello", 3, "mallory", "t1") {
		t.Error("the first refusal is not posted")
	}
	if !claim("octo/hello", 3, "mallory", "t1") {
		t.Error("the first refusal's task, run again, may not post it")
	}
	if claim("octo/hello", 3, "mallory", "t2") || claim("Octo/Hello", 3, "MALLORY", "t3") {
		t.Error("a second refusal within the window is posted")
	}
	if !claim("octo/hello", 4, "mallory", "t4") || !claim("octo/hello", 3, "eve", "t5") {
		t.Error("a refusal on another issue or to another sender is withheld")
	}
	d, err := rdb.PTTL(ctx, refusalKey("octo/hello", 3, "mallory")).Result()
	if err != nil || d <= RefusalWindow-time.Minute || d > RefusalWindow {
		t.Errorf("refusal slot's TTL = %s, %v; want %s", d, err, RefusalWindow)
	}
	// Once the window is over, one refusal is posted again.
	if err := rdb.Del(ctx, refusalKey("octo/hello", 3, "mallory")).Err(); err != nil {
		t.Fatal(err)
	}
	if !claim("octo/hello", 3, "mallory", "t6") {
		t.Error("no refusal after the window")
	}
}
