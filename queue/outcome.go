package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Outcomes keeps what became of each finished task (app.TaskOutcome), for
// "agentbot stats". An outcome is saved when its task ends and updated,
// in one optimistic transaction each, when its pull request is merged or
// reverted. The package doc lists its keys.
type Outcomes struct {
	rdb redis.UniversalClient
}

// NewOutcomes returns the outcome store over rdb, which the caller closes.
func NewOutcomes(rdb redis.UniversalClient) *Outcomes { return &Outcomes{rdb: rdb} }

const outcomesKey = "agentbot:outcomes"

func outcomeKey(task string) string { return "agentbot:outcome:" + task }

func outcomePRKey(repo string, pr int) string {
	return "agentbot:outcome:pr:" + repo + "#" + strconv.Itoa(pr)
}

// Save stores o, replacing the task's earlier outcome, and stamps
// o.FinishedAt when it is zero. An outcome without a task or a repository
// is refused with an *app.Error.
func (s *Outcomes) Save(ctx context.Context, o app.TaskOutcome) error {
	if o.Task == "" || o.Repo == "" {
		return app.Errorf(app.EInvalid, "An outcome needs a task and a repository (task %q, repository %q).", o.Task, o.Repo)
	}
	if o.FinishedAt.IsZero() {
		o.FinishedAt = time.Now().UTC()
	}
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("encode outcome of task %s: %w", o.Task, err)
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, outcomeKey(o.Task), b, 0)
		p.ZAdd(ctx, outcomesKey, redis.Z{Score: float64(o.FinishedAt.UnixMilli()), Member: o.Task})
		if o.PR != 0 {
			p.Set(ctx, outcomePRKey(o.Repo, o.PR), o.Task, 0)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save outcome of task %s: %w", o.Task, err)
	}
	return nil
}

// Outcome returns the outcome of task, or an *app.Error with code
// app.ENotFound.
func (s *Outcomes) Outcome(ctx context.Context, task string) (app.TaskOutcome, error) {
	var o app.TaskOutcome
	b, err := s.rdb.Get(ctx, outcomeKey(task)).Bytes()
	if errors.Is(err, redis.Nil) {
		return o, app.Errorf(app.ENotFound, "There is no outcome of task %q.", task)
	}
	if err != nil {
		return o, fmt.Errorf("read outcome of task %s: %w", task, err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decode outcome of task %s: %w", task, err)
	}
	return o, nil
}

// ByPR returns the outcome of the task that opened the pull request
// repo#pr, or an *app.Error with code app.ENotFound when no task did.
func (s *Outcomes) ByPR(ctx context.Context, repo string, pr int) (app.TaskOutcome, error) {
	task, err := s.rdb.Get(ctx, outcomePRKey(repo, pr)).Result()
	if errors.Is(err, redis.Nil) {
		return app.TaskOutcome{}, app.Errorf(app.ENotFound, "No task opened %s#%d.", repo, pr)
	}
	if err != nil {
		return app.TaskOutcome{}, fmt.Errorf("find the task of %s#%d: %w", repo, pr, err)
	}
	return s.Outcome(ctx, task)
}

// Since returns the outcomes of tasks finished at or after since, oldest
// first; the zero time selects all.
func (s *Outcomes) Since(ctx context.Context, since time.Time) ([]app.TaskOutcome, error) {
	from := "-inf"
	if !since.IsZero() {
		from = strconv.FormatInt(since.UnixMilli(), 10)
	}
	ids, err := s.rdb.ZRangeByScore(ctx, outcomesKey, &redis.ZRangeBy{Min: from, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("list outcomes: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = outcomeKey(id)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("read outcomes: %w", err)
	}
	outs := make([]app.TaskOutcome, 0, len(vals))
	for i, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue // indexed, but the outcome is gone
		}
		var o app.TaskOutcome
		if err := json.Unmarshal([]byte(raw), &o); err != nil {
			return nil, fmt.Errorf("decode outcome of task %s: %w", ids[i], err)
		}
		outs = append(outs, o)
	}
	return outs, nil
}

// OutcomeMetrics exports outcomes as Prometheus metrics, labelled by
// repository and model. Cost per successful task is a query over them:
//
//	sum(agentbot_task_cost_usd_total) / sum(agentbot_tasks_total{result="succeeded"})
type OutcomeMetrics struct {
	tasks      *prometheus.CounterVec
	cost       *prometheus.CounterVec
	tokens     *prometheus.CounterVec
	incidents  *prometheus.CounterVec
	iterations *prometheus.HistogramVec
	wall       *prometheus.HistogramVec
	merged     *prometheus.CounterVec
	reverted   *prometheus.CounterVec
	survival   *prometheus.HistogramVec
}

// NewOutcomeMetrics registers the outcome metrics on reg.
func NewOutcomeMetrics(reg prometheus.Registerer) (*OutcomeMetrics, error) {
	labels := []string{"repo", "model"}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, slices.Concat(labels, extra))
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	m := &OutcomeMetrics{
		tasks:      counter("agentbot_tasks_total", "Finished tasks; result is succeeded (checks passed, PR opened without human help) or failed.", "result"),
		cost:       counter("agentbot_task_cost_usd_total", "Model cost of finished tasks in US dollars, failures included."),
		tokens:     counter("agentbot_task_tokens_total", "Tokens sent and received by finished tasks."),
		incidents:  counter("agentbot_safety_incidents_total", "Blocked writes, blocked commands, gate refusals and verifications that contradict the loop."),
		iterations: histogram("agentbot_task_iterations", "Agent loop steps per finished task.", []float64{1, 2, 5, 10, 20, 30, 50, 100}),
		wall:       histogram("agentbot_task_wall_seconds", "Wall time per finished task.", prometheus.ExponentialBuckets(10, 2, 10)),
		merged:     counter("agentbot_prs_merged_total", "Agent pull requests merged."),
		reverted:   counter("agentbot_prs_reverted_total", "Merged agent pull requests later reverted."),
		survival:   histogram("agentbot_pr_survival_ratio", "Share of the agent's diff that survives in the merged pull request.", []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}),
	}
	for _, c := range []prometheus.Collector{m.tasks, m.cost, m.tokens, m.incidents, m.iterations, m.wall, m.merged, m.reverted, m.survival} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register outcome metrics: %w", err)
		}
	}
	return m, nil
}

// Finished counts a task that ended.
func (m *OutcomeMetrics) Finished(o app.TaskOutcome) {
	result := "failed"
	if o.Succeeded() {
		result = "succeeded"
	}
	m.tasks.WithLabelValues(o.Repo, o.Model, result).Inc()
	m.cost.WithLabelValues(o.Repo, o.Model).Add(o.Cost)
	m.tokens.WithLabelValues(o.Repo, o.Model).Add(float64(o.Tokens))
	m.incidents.WithLabelValues(o.Repo, o.Model).Add(float64(o.SafetyIncidents))
	m.iterations.WithLabelValues(o.Repo, o.Model).Observe(float64(o.Iterations))
	m.wall.WithLabelValues(o.Repo, o.Model).Observe(o.WallTime.Seconds())
}

// Merged counts a task's pull request merged, with its survival when known.
func (m *OutcomeMetrics) Merged(o app.TaskOutcome) {
	m.merged.WithLabelValues(o.Repo, o.Model).Inc()
	if o.Survival != nil {
		m.survival.WithLabelValues(o.Repo, o.Model).Observe(o.Survival.Share())
	}
}

// Reverted counts a task's merged pull request reverted.
func (m *OutcomeMetrics) Reverted(o app.TaskOutcome) {
	m.reverted.WithLabelValues(o.Repo, o.Model).Inc()
}

// SetMerged records that the pull request of task was merged as
// mergeCommit, with the survival of the agent's diff when it could be
// measured (nil otherwise). It reports first false, changing nothing, when
// the outcome was already merged: the caller counts a merge only once
// (OutcomeMetrics.Merged). A task without an outcome is an *app.Error with
// code app.ENotFound.
func (s *Outcomes) SetMerged(ctx context.Context, task, mergeCommit string, survival *app.Survival) (o app.TaskOutcome, first bool, err error) {
	return s.update(ctx, task, func(o *app.TaskOutcome) bool {
		if o.Merged {
			return false
		}
		o.Merged, o.MergeCommit, o.Survival = true, mergeCommit, survival
		return true
	})
}

// MarkReverted records r on the merged outcomes it undoes in its
// repository and returns those it marked, so that the caller counts each
// revert once (OutcomeMetrics.Reverted). An outcome already marked is left
// alone. It reads the repository's outcomes, because a revert may name its
// commit abbreviated: reverts are rare, and an outcome is a few hundred
// bytes.
func (s *Outcomes) MarkReverted(ctx context.Context, r app.Revert) ([]app.TaskOutcome, error) {
	all, err := s.Since(ctx, time.Time{})
	if err != nil {
		return nil, err
	}
	undone := func(o *app.TaskOutcome) bool {
		return o.Merged && !o.Reverted && strings.EqualFold(o.Repo, r.Repo) && r.Undoes(o.MergeCommit, o.PR)
	}
	var marked []app.TaskOutcome
	for _, o := range all {
		if !undone(&o) {
			continue
		}
		o, changed, err := s.update(ctx, o.Task, func(o *app.TaskOutcome) bool {
			if !undone(o) {
				return false // marked meanwhile
			}
			o.Reverted = true
			return true
		})
		if err != nil {
			return marked, err
		}
		if changed {
			marked = append(marked, o)
		}
	}
	return marked, nil
}

// updateAttempts bounds how often update retries a transaction that
// another writer interrupted.
const updateAttempts = 10

// update applies change to the outcome of task as one optimistic
// transaction: when another writer changes the outcome between the read
// and the write, the write is dropped and change applied again to what is
// there now, so two workers recording the same event cannot both see it as
// new. change reports whether it changed anything; when it did not,
// nothing is written.
func (s *Outcomes) update(ctx context.Context, task string, change func(*app.TaskOutcome) bool) (app.TaskOutcome, bool, error) {
	key := outcomeKey(task)
	for range updateAttempts {
		var o app.TaskOutcome
		changed := false
		err := s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			b, err := tx.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				return app.Errorf(app.ENotFound, "There is no outcome of task %q.", task)
			}
			if err != nil {
				return fmt.Errorf("read outcome of task %s: %w", task, err)
			}
			if err := json.Unmarshal(b, &o); err != nil {
				return fmt.Errorf("decode outcome of task %s: %w", task, err)
			}
			if changed = change(&o); !changed {
				return nil
			}
			if b, err = json.Marshal(o); err != nil {
				return fmt.Errorf("encode outcome of task %s: %w", task, err)
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, b, 0)
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return app.TaskOutcome{}, false, err
		}
		return o, changed, nil
	}
	return app.TaskOutcome{}, false, fmt.Errorf("update outcome of task %s: changed by others %d times in a row", task, updateAttempts)
}
