package queue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app/policy"
)

// Budgets counts what tasks spend, by the hour, per installation,
// repository and requester, so that the operator's budgets per period
// (policy.Budget) are checked by reading one hash per subject rather than
// every outcome. A task records what it has spent so far, as often as it
// likes: only the increase over its last record is counted, in one
// script, so a record repeated after a crash counts nothing twice.
// Dollars are counted in millionths, as integers, so that sums are exact.
type Budgets struct {
	rdb redis.UniversalClient
}

// NewBudgets returns the spending store over rdb, which the caller closes.
func NewBudgets(rdb redis.UniversalClient) *Budgets { return &Budgets{rdb: rdb} }

// SpendHistory is how long spending is kept: the longest window a budget
// may count over, and a day more.
const SpendHistory = policy.MaxBudgetWindow + 24*time.Hour

const spendersKey = "agentbot:spenders"

func spendKey(s policy.BudgetSubject) string { return "agentbot:spend:" + s.Key() }

func taskSpentKey(task string) string { return "agentbot:task:" + task + ":spent" }

// recordScript counts the increase of a task's spending over its last
// record in the hour's fields of each subject's hash ("t:{hour}" tokens,
// "u:{hour}" micro-dollars, "name"), drops the fields of hours no longer
// kept when an hour's first spending arrives, and indexes the subjects by
// their latest spending.
//
//	KEYS: task's spent hash, spenders zset, then one spend hash per subject
//	ARGV: tokens so far, micro-dollars so far, hour (unix hours), now (ms),
//	      lifetime (ms), the oldest hour kept, then per subject its key and name
//	returns 1 when something was counted
var recordScript = redis.NewScript(`
local dt = tonumber(ARGV[1]) - tonumber(redis.call('HGET', KEYS[1], 't') or '0')
local du = tonumber(ARGV[2]) - tonumber(redis.call('HGET', KEYS[1], 'u') or '0')
if dt < 0 then dt = 0 end
if du < 0 then du = 0 end
if dt == 0 and du == 0 then return 0 end
redis.call('HINCRBY', KEYS[1], 't', dt)
redis.call('HINCRBY', KEYS[1], 'u', du)
redis.call('PEXPIRE', KEYS[1], ARGV[5])
local tf, uf, oldest = 't:' .. ARGV[3], 'u:' .. ARGV[3], tonumber(ARGV[6])
for i = 3, #KEYS do
  local k, arg = KEYS[i], 7 + 2 * (i - 3)
  local fresh = redis.call('HEXISTS', k, tf) == 0
  redis.call('HINCRBY', k, tf, dt)
  redis.call('HINCRBY', k, uf, du)
  redis.call('HSET', k, 'name', ARGV[arg + 1])
  redis.call('PEXPIRE', k, ARGV[5])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[arg])
  if fresh then
    for _, f in ipairs(redis.call('HKEYS', k)) do
      local h = tonumber(string.match(f, '^[tu]:(%d+)$'))
      if h and h < oldest then redis.call('HDEL', k, f) end
    end
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. string.format('%d', tonumber(ARGV[4]) - tonumber(ARGV[5])))
return 1`)

// Record sets what task has spent so far, for each of subjects, at the
// time at: what it spent beyond its last record is counted in at's hour.
// A total below the last record counts nothing.
func (b *Budgets) Record(ctx context.Context, task string, subjects []policy.BudgetSubject, total policy.Spend, at time.Time) error {
	if len(subjects) == 0 {
		return nil
	}
	hour := at.Unix() / 3600
	keys := []string{taskSpentKey(task), spendersKey}
	args := []any{total.Tokens, micros(total.USD), hour, at.UnixMilli(), SpendHistory.Milliseconds(),
		hour - int64(SpendHistory/time.Hour)}
	for _, s := range subjects {
		keys = append(keys, spendKey(s))
		args = append(args, s.Key(), s.Name)
	}
	if err := recordScript.Run(ctx, b.rdb, keys, args...).Err(); err != nil {
		return fmt.Errorf("record the spending of task %s: %w", task, err)
	}
	return nil
}

func micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }

// Statuses works out each budget of its subject at now, reading each
// subject's spending once.
func (b *Budgets) Statuses(ctx context.Context, of []policy.BudgetOf, now time.Time) ([]policy.BudgetStatus, error) {
	if len(of) == 0 {
		return nil, nil
	}
	reads := map[string]*redis.MapStringStringCmd{}
	_, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range of {
			if k := o.Subject.Key(); reads[k] == nil {
				reads[k] = p.HGetAll(ctx, spendKey(o.Subject))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read spending: %w", err)
	}
	out := make([]policy.BudgetStatus, len(of))
	for i, o := range of {
		hours, err := spendHours(reads[o.Subject.Key()].Val())
		if err != nil {
			return nil, fmt.Errorf("read the spending of %s: %w", o.Subject.Key(), err)
		}
		out[i] = o.Budget.Status(o.Subject, hours, now)
	}
	return out, nil
}

// spendHours decodes a subject's hash into its spending by hour, oldest
// first.
func spendHours(fields map[string]string) ([]policy.HourSpend, error) {
	byHour := map[int64]*policy.HourSpend{}
	for f, v := range fields {
		kind, h, ok := strings.Cut(f, ":")
		if !ok || (kind != "t" && kind != "u") {
			continue // name
		}
		hour, err := strconv.ParseInt(h, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f, err)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", f, err)
		}
		hs := byHour[hour]
		if hs == nil {
			hs = &policy.HourSpend{Hour: time.Unix(hour*3600, 0).UTC()}
			byHour[hour] = hs
		}
		if kind == "t" {
			hs.Tokens = n
		} else {
			hs.USD = float64(n) / 1e6
		}
	}
	out := make([]policy.HourSpend, 0, len(byHour))
	for _, h := range byHour {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b policy.HourSpend) int { return a.Hour.Compare(b.Hour) })
	return out, nil
}

// Spenders returns the subjects that spent within SpendHistory, with
// their names, by scope and id.
func (b *Budgets) Spenders(ctx context.Context) ([]policy.BudgetSubject, error) {
	members, err := b.rdb.ZRange(ctx, spendersKey, 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("list spenders: %w", err)
	}
	var out []policy.BudgetSubject
	for _, m := range members {
		scope, id, _ := strings.Cut(m, ":")
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("spender %q: %w", m, err)
		}
		out = append(out, policy.BudgetSubject{Scope: policy.BudgetScope(scope), ID: n})
	}
	if len(out) == 0 {
		return nil, nil
	}
	names := make([]*redis.StringCmd, len(out))
	_, err = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range out {
			names[i] = p.HGet(ctx, spendKey(s), "name")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("read spenders' names: %w", err)
	}
	for i := range out {
		out[i].Name = names[i].Val()
	}
	slices.SortFunc(out, func(x, y policy.BudgetSubject) int {
		return cmp.Or(cmp.Compare(x.Scope, y.Scope), cmp.Compare(x.ID, y.ID))
	})
	return out, nil
}

// Report works out every budget of budgets for every subject that spent
// within SpendHistory, at now. A budget no subject of its scope has spent
// against is left out.
func (b *Budgets) Report(ctx context.Context, budgets []policy.Budget, now time.Time) ([]policy.BudgetStatus, error) {
	if len(budgets) == 0 {
		return nil, nil
	}
	subjects, err := b.Spenders(ctx)
	if err != nil {
		return nil, err
	}
	return b.Statuses(ctx, policy.BudgetsOf(budgets, subjects), now)
}
