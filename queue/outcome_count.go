package queue

import (
	"context"

	"github.com/agentbot/agentbot/app"
)

// CountingOutcomes saves finished tasks' outcomes and counts each one it
// saved in the outcome metrics, so that a task is counted once, when its
// outcome is recorded, and never for a save that failed.
type CountingOutcomes struct {
	outcomes *Outcomes
	metrics  *OutcomeMetrics // nil: a process that exports no metrics
}

// Counting returns s saving as before and counting each saved outcome in
// m as a finished task. m may be nil, in a process that exports no
// metrics: then nothing is counted.
func (s *Outcomes) Counting(m *OutcomeMetrics) *CountingOutcomes {
	return &CountingOutcomes{outcomes: s, metrics: m}
}

// Save records o and, once it is recorded, counts it.
func (c *CountingOutcomes) Save(ctx context.Context, o app.TaskOutcome) error {
	if err := c.outcomes.Save(ctx, o); err != nil {
		return err
	}
	if c.metrics != nil {
		c.metrics.Finished(o)
	}
	return nil
}
