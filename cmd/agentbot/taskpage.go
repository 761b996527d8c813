package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/taskpage"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/agent"
	"github.com/agentbot/agentbot/runner/change"
	"github.com/agentbot/agentbot/runner/llm"
)

// pageFlags configure the tasks' live pages: the intake serves them when
// it has the secret; workers link them when they also know the intake's
// public address.
type pageFlags struct {
	publicURL  string
	secretFile string
}

func (f *pageFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.publicURL, "public-url", "",
		"the intake's public address, such as https://agentbot.example.com: status comments link each task's live page under it (needs the task page secret)")
	fs.StringVar(&f.secretFile, "task-page-secret-file", "",
		"file with the secret that signs the links of task pages, at least 32 bytes (or set AGENTBOT_TASK_PAGE_SECRET); rotating it revokes every link")
}

// signer returns the signer of the pages' links, or nil when no secret is
// set.
func (f pageFlags) signer(env Env) (*taskpage.Signer, error) {
	secret := env.Getenv("AGENTBOT_TASK_PAGE_SECRET")
	switch {
	case f.secretFile != "" && secret != "":
		return nil, errors.New("set either --task-page-secret-file or AGENTBOT_TASK_PAGE_SECRET, not both")
	case f.secretFile != "":
		b, err := os.ReadFile(f.secretFile)
		if err != nil {
			return nil, fmt.Errorf("read the task page secret: %w", err)
		}
		secret = string(b)
	}
	if secret = strings.TrimSpace(secret); secret == "" {
		if f.publicURL != "" {
			return nil, errors.New("--public-url links task pages: set --task-page-secret-file or AGENTBOT_TASK_PAGE_SECRET to sign them")
		}
		return nil, nil
	}
	s, err := taskpage.NewSigner([]byte(secret))
	if err != nil {
		return nil, fmt.Errorf("--task-page-secret-file: %s", app.ErrorMessage(err))
	}
	return s, nil
}

// links returns what links a task's page from its status comment, valid
// as long as its trace is kept, or nil when pages are not linked.
func (f pageFlags) links(env Env, traceTTL time.Duration) (runner.TaskPages, error) {
	s, err := f.signer(env)
	if err != nil || s == nil || f.publicURL == "" {
		return nil, err
	}
	base, err := taskpage.ParseBase(f.publicURL)
	if err != nil {
		return nil, fmt.Errorf("--public-url: %s", app.ErrorMessage(err))
	}
	return taskpage.Links{Base: base, Signer: s, TTL: traceTTL}, nil
}

// handler returns the pages served by the intake over rdb, or nil when
// there is no secret to check their links with.
func (f pageFlags) handler(rdb redis.UniversalClient, env Env, log *slog.Logger) (http.Handler, error) {
	s, err := f.signer(env)
	if err != nil || s == nil {
		return nil, err
	}
	src := pageSource{store: queue.NewStore(rdb), traces: queue.NewTraces(rdb, 0), outcomes: queue.NewOutcomes(rdb)}
	return taskpage.NewHandler(taskpage.Config{Signer: s, Source: src, Logger: log.With("server", "task pages")}), nil
}

// maxAttempts bounds the attempts' states a page looks for: more than
// any server allows.
const maxAttempts = 8

// pageSource is taskpage.Source over the queue's stores.
type pageSource struct {
	store    *queue.Store
	traces   *queue.Traces
	outcomes *queue.Outcomes
}

func (s pageSource) Page(ctx context.Context, id string) (taskpage.Page, error) {
	rec, err := s.store.Task(ctx, id)
	if err != nil {
		return taskpage.Page{}, err
	}
	p := taskpage.Page{Task: rec.Task, State: rec.State, Step: rec.Step, UpdatedAt: rec.UpdatedAt}
	if p.Events, err = s.traces.Trace(ctx, id); err != nil && app.ErrorCode(err) != app.ENotFound {
		return p, err
	}
	if p.Loops, err = s.loops(ctx, id); err != nil {
		return p, err
	}
	if rec.State.Final() {
		o, err := s.outcomes.Outcome(ctx, id)
		switch {
		case err == nil:
			p.Outcome = &o
		case app.ErrorCode(err) != app.ENotFound:
			return p, err
		}
	}
	return p, nil
}

// loops reads the saved state of task id's loop, or of each of its
// attempts.
func (s pageSource) loops(ctx context.Context, id string) ([]taskpage.Loop, error) {
	l, ok, err := s.loop(ctx, id, 0)
	if err != nil || ok {
		return []taskpage.Loop{l}, err
	}
	var loops []taskpage.Loop
	for n := 1; n <= maxAttempts; n++ {
		l, ok, err := s.loop(ctx, change.AttemptID(id, n), n)
		if err != nil || !ok {
			return loops, err
		}
		loops = append(loops, l)
	}
	return loops, nil
}

func (s pageSource) loop(ctx context.Context, id string, attempt int) (taskpage.Loop, bool, error) {
	raw, err := s.store.LoadState(ctx, id)
	if err != nil || raw == nil {
		return taskpage.Loop{}, false, err
	}
	var st agent.State
	if err := json.Unmarshal(raw, &st); err != nil {
		return taskpage.Loop{}, false, fmt.Errorf("decode the loop state of %s: %w", id, err)
	}
	l := taskpage.Loop{Attempt: attempt, Diff: st.Diff}
	// Each step adds one answer of the model; a transcript that began with
	// an earlier conversation has more, the last Step are this loop's.
	var said []string
	for _, m := range st.Messages {
		if m.Role == llm.RoleAssistant {
			said = append(said, m.Content)
		}
	}
	l.Said = said[max(0, len(said)-st.Step):]
	for _, c := range st.Checks {
		l.Checks = append(l.Checks, taskpage.Check{Name: c.Name, Passed: c.Passed, ExitCode: c.ExitCode, Output: c.Output})
	}
	return l, true, nil
}
