package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// What is kept with agentbot's own pull requests beyond any one task: who
// asked for the task that opened each, and how each failing check on each
// of its head commits was answered.

func pullKey(repo string, number int) string { return "agentbot:pull:" + issueRef(repo, number) }

func ciAnswersKey(repo string, number int) string { return pullKey(repo, number) + ":ci" }

// ciField names one failing check on one head commit in a pull request's
// answers, for one owner: a repository made again under the same name
// answers its own checks. The check's name comes last, as it may hold
// spaces.
func ciField(a app.CIAnswer) string {
	return fmt.Sprintf("%d %d %s %d %s", a.Owner.InstallationID, a.Owner.RepoID, a.Head, a.AppID, a.Check)
}

// SavePull keeps p with its pull request, replacing what was kept. It is
// kept without expiry, as long as the pull request may see follow-ups.
func (s *Store) SavePull(ctx context.Context, p app.AgentPull) error {
	if p.Repo == "" || p.Number <= 0 || p.Task == "" {
		return app.Errorf(app.EInvalid, "A pull request's record needs its repository, number and task (repository %q, number %d, task %q).", p.Repo, p.Number, p.Task)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode the record of %s#%d: %w", p.Repo, p.Number, err)
	}
	if err := s.rdb.Set(ctx, pullKey(p.Repo, p.Number), b, 0).Err(); err != nil {
		return fmt.Errorf("keep the record of %s#%d: %w", p.Repo, p.Number, err)
	}
	return nil
}

// Pull returns what is kept with repo#number; ok is false when nothing is.
func (s *Store) Pull(ctx context.Context, repo string, number int) (p app.AgentPull, ok bool, err error) {
	b, err := s.rdb.Get(ctx, pullKey(repo, number)).Bytes()
	if errors.Is(err, redis.Nil) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("read the record of %s#%d: %w", repo, number, err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, false, fmt.Errorf("decode the record of %s#%d: %w", repo, number, err)
	}
	return p, true, nil
}

// answerScript records each answer unless its check on its head was
// answered already, and returns the answer recorded for each, in one
// step: of two tasks answering the same check, the first one's answer
// stands and both see it. The answers expire their retention after the
// last one (ARGV[1] milliseconds, 0 for none), no sooner than a writer
// with a longer retention set (GT).
//
//	KEYS: the pull request's answers
//	ARGV: retention, then a field and an answer's JSON per answer
var answerScript = redis.NewScript(`
local fresh = redis.call('EXISTS', KEYS[1]) == 0
local out = {}
for i = 2, #ARGV, 2 do
	redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i+1])
	out[#out+1] = redis.call('HGET', KEYS[1], ARGV[i])
end
if ARGV[1] == '0' then
	redis.call('PERSIST', KEYS[1])
elseif fresh then
	redis.call('PEXPIRE', KEYS[1], ARGV[1])
else
	redis.call('PEXPIRE', KEYS[1], ARGV[1], 'GT')
end
return out`)

// AnswerCI records answers to failing checks on repo#number unless their
// check on their head was answered before, and returns the answer that
// stands for each, in order: the earlier one where there was one.
func (s *Store) AnswerCI(ctx context.Context, repo string, number int, answers []app.CIAnswer) ([]app.CIAnswer, error) {
	if len(answers) == 0 {
		return nil, nil
	}
	args := []any{s.ttlMillis()}
	for _, a := range answers {
		if a.Head == "" || a.Check == "" || a.Task == "" || a.Decision == "" {
			return nil, app.Errorf(app.EInvalid, "An answer to failing CI needs its head, check, task and decision (head %q, check %q, task %q, decision %q).", a.Head, a.Check, a.Task, a.Decision)
		}
		b, err := json.Marshal(a)
		if err != nil {
			return nil, fmt.Errorf("encode the answer to %s on %s: %w", a.Check, a.Head, err)
		}
		args = append(args, ciField(a), b)
	}
	vals, err := answerScript.Run(ctx, s.rdb, []string{ciAnswersKey(repo, number)}, args...).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("record the answers to failing CI on %s#%d: %w", repo, number, err)
	}
	out := make([]app.CIAnswer, len(vals))
	for i, v := range vals {
		if err := json.Unmarshal([]byte(v), &out[i]); err != nil {
			return nil, fmt.Errorf("decode an answer to failing CI on %s#%d: %w", repo, number, err)
		}
	}
	return out, nil
}

// CIAnswers returns every answer recorded to failing checks on
// repo#number, in no order.
func (s *Store) CIAnswers(ctx context.Context, repo string, number int) ([]app.CIAnswer, error) {
	all, err := s.rdb.HGetAll(ctx, ciAnswersKey(repo, number)).Result()
	if err != nil {
		return nil, fmt.Errorf("read the answers to failing CI on %s#%d: %w", repo, number, err)
	}
	out := make([]app.CIAnswer, 0, len(all))
	for field, v := range all {
		var a app.CIAnswer
		if err := json.Unmarshal([]byte(v), &a); err != nil {
			return nil, fmt.Errorf("decode the answer %q on %s#%d: %w", field, repo, number, err)
		}
		out = append(out, a)
	}
	return out, nil
}
