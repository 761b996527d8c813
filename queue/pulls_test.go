package queue

import (
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestPullRecordIsKeptAndRefusedWhenIncomplete(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := NewStore(connect(t, redistest.Start(t)))
	if _, ok, err := store.Pull(ctx, "octo/hello", 4); ok || err != nil {
		t.Fatalf("a pull request nobody kept a record of: ok %v, err %v", ok, err)
	}
	p := app.AgentPull{Owner: app.RecordOwner{InstallationID: 7, RepoID: 70}, Repo: "octo/hello", Number: 4, Task: "t1", Requester: "ada", RequesterID: 583231}
	if err := store.SavePull(ctx, p); err != nil {
		t.Fatal(err)
	}
	// GitHub compares repository names without regard to case.
	got, ok, err := store.Pull(ctx, "Octo/Hello", 4)
	if err != nil || !ok || got != p {
		t.Errorf("Pull = %+v, %v, %v; want %+v", got, ok, err, p)
	}
	if err := store.SavePull(ctx, app.AgentPull{Repo: "octo/hello", Number: 5}); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("a record without its task: %v; want an invalid-input error", err)
	}
	if _, ok, _ := store.Pull(ctx, "octo/hello", 5); ok {
		t.Error("the refused record was kept")
	}
}

func TestEachFailingCheckOnAHeadIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := NewStore(connect(t, redistest.Start(t))).WithRetention(time.Hour)
	owner := app.RecordOwner{InstallationID: 7, RepoID: 70}
	test := app.CIAnswer{Owner: owner, Head: "h1", AppID: 15368, Check: "Test", Task: "t1", Decision: app.CIFailsOnBase, BaseRun: "https://x/runs/1"}
	got, err := store.AnswerCI(ctx, "octo/hello", 4, []app.CIAnswer{test})
	if err != nil || len(got) != 1 || got[0] != test {
		t.Fatalf("first answer: %+v, %v", got, err)
	}
	// A second task on the same head: the check answered before keeps its
	// answer; the other check, and the same check on another head, by
	// another App or of a repository made again under the same name, are
	// new.
	vet := app.CIAnswer{Owner: owner, Head: "h1", AppID: 15368, Check: "Vet lint", Task: "t2", Decision: app.CIFollowUp}
	again := test
	again.Task, again.Decision = "t2", app.CIFollowUp
	otherHead, otherApp, otherRepo := again, again, again
	otherHead.Head, otherApp.AppID, otherRepo.Owner.RepoID = "h2", 9191, 71
	got, err = store.AnswerCI(ctx, "Octo/Hello", 4, []app.CIAnswer{again, vet, otherHead, otherApp, otherRepo})
	if err != nil {
		t.Fatal(err)
	}
	want := []app.CIAnswer{test, vet, otherHead, otherApp, otherRepo}
	if len(got) != len(want) {
		t.Fatalf("answers %+v; want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("answer %d: %+v; want %+v", i, got[i], want[i])
		}
	}
	all, err := store.CIAnswers(ctx, "octo/hello", 4)
	if err != nil || len(all) != len(want) {
		t.Errorf("CIAnswers = %+v, %v; want the %d answers", all, err, len(want))
	}
	if _, err := store.AnswerCI(ctx, "octo/hello", 4, []app.CIAnswer{{Head: "h1", Check: "Test", Task: "t3"}}); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("an answer without a decision: %v; want an invalid-input error", err)
	}
}
