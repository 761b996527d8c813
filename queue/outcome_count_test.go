package queue

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

func TestCountingOutcomesCountWhatWasSaved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewOutcomes(connect(t, redistest.Start(t)))
	m, err := NewOutcomeMetrics(prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c := s.Counting(m)
	ok := app.TaskOutcome{Task: "t1", Repo: "o/api", Model: "m1", ChecksPassed: true, PR: 3}
	if err := c.Save(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "t1"); err != nil {
		t.Errorf("the counted outcome was not saved: %v", err)
	}
	// An outcome the store refuses is not counted.
	if err := c.Save(ctx, app.TaskOutcome{Repo: "o/api", Model: "m1"}); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("Save without a task = %v, want an invalid error", err)
	}
	if got := testutil.ToFloat64(m.tasks.WithLabelValues("o/api", "m1", "succeeded")); got != 1 {
		t.Errorf("succeeded = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.tasks.WithLabelValues("o/api", "m1", "failed")); got != 0 {
		t.Errorf("failed = %v, want 0: a refused save was counted", got)
	}

	// Without metrics it saves and counts nothing.
	if err := s.Counting(nil).Save(ctx, app.TaskOutcome{Task: "t2", Repo: "o/api"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Outcome(ctx, "t2"); err != nil {
		t.Errorf("the uncounted outcome was not saved: %v", err)
	}
}
