package demo

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// The sample's repository, who asks for the fix, and how.
const (
	Repo      = "acme/stats"
	Requester = "ada"
	Comment   = "Thanks for the report!\n\n/agent fix"
)

// Options say where a World's agentbot keeps its queue and runs its
// sandboxes, and which model plays.
type Options struct {
	RedisURL string
	// Image is the sandbox image; Executor the static agentbot binary
	// mounted into sandboxes ("": the serving binary itself).
	Image, Executor string
	// Getenv reads the AGENTBOT_LLM_BASE_URL, AGENTBOT_LLM_API_KEY,
	// AGENTBOT_MODEL and AGENTBOT_FAST_MODEL of whoever runs the demo:
	// with a base URL, that model plays instead of the sample's script.
	Getenv func(string) string
}

// World is the outside world of an agentbot: a simulated GitHub holding
// the sample repository and its issue, and a model. It does not run
// agentbot: whoever starts a serve or worker gives it Args and Env, and
// calls Attach with the intake's webhook URL.
type World struct {
	Sim *githubsim.Server
	// SimDir holds the simulator's bare repositories, <owner>/<name>.git.
	SimDir       string
	Repo         string
	Issue        int
	Title        string
	Installation int64
	// Model says, for people, what plays the model.
	Model string
	// LLM is the scripted model, nil when a real one plays.
	LLM *llmtest.Server
	// Args are the flags of an agentbot serve or worker against this
	// world (a serve adds --addr); Env its environment, webhook secret
	// and model settings included.
	Args []string
	Env  map[string]string
	// Webhook is the intake's URL, once attached.
	Webhook string
	RDB     *redis.Client
	Store   *queue.Store

	closers []func()
}

// Start builds the world around sample. Close it when done.
func Start(ctx context.Context, sample Sample, o Options) (*World, error) {
	w := &World{Repo: Repo, Title: sample.Title}
	if err := w.start(ctx, sample, o); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

func (w *World) start(ctx context.Context, sample Sample, o Options) error {
	tmp, err := os.MkdirTemp("", "agentbot-demo-")
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() { os.RemoveAll(tmp) })
	w.SimDir = filepath.Join(tmp, "github")
	if err := os.Mkdir(w.SimDir, 0o700); err != nil {
		return err
	}
	if w.Sim, err = githubsim.New(githubsim.Options{Dir: w.SimDir}); err != nil {
		return err
	}
	w.closers = append(w.closers, func() { w.Sim.Close() })
	w.Installation = w.Sim.AddInstallation("acme")
	if err := w.Sim.AddRepo(w.Installation, w.Repo, sample.Files); err != nil {
		return err
	}
	if w.Issue, err = w.Sim.AddIssue(w.Repo, "grace", sample.Title, sample.Body); err != nil {
		return err
	}
	if err := w.Sim.SetPermission(w.Repo, Requester, "write"); err != nil {
		return err
	}
	ghApp := w.Sim.App()
	keyFile := filepath.Join(tmp, "app.pem")
	if err := os.WriteFile(keyFile, ghApp.PrivateKeyPEM, 0o600); err != nil {
		return err
	}

	llmURL, llmKey := o.Getenv("AGENTBOT_LLM_BASE_URL"), o.Getenv("AGENTBOT_LLM_API_KEY")
	w.Model = "the model at " + llmURL
	if llmURL == "" {
		srv, err := llmtest.Start(sample.Script)
		if err != nil {
			return err
		}
		w.closers = append(w.closers, srv.Close)
		w.LLM = srv
		llmURL, llmKey, w.Model = srv.URL(), "", "scripted, playing the recorded fix (set AGENTBOT_LLM_BASE_URL for a real model)"
	}
	w.Env = map[string]string{"AGENTBOT_WEBHOOK_SECRET": ghApp.WebhookSecret,
		"AGENTBOT_LLM_BASE_URL": llmURL, "AGENTBOT_LLM_API_KEY": llmKey,
		"AGENTBOT_MODEL": o.Getenv("AGENTBOT_MODEL"), "AGENTBOT_FAST_MODEL": o.Getenv("AGENTBOT_FAST_MODEL"),
		// The status comment links the task's live page on the intake,
		// under a secret of the world's own; whoever serves adds the
		// intake's address as --public-url.
		"AGENTBOT_TASK_PAGE_SECRET": rand.Text() + rand.Text()}
	w.Args = []string{"--redis-url", o.RedisURL, "--app-id", strconv.FormatInt(ghApp.ID, 10),
		"--private-key-file", keyFile, "--github-url", w.Sim.APIURL(), "--data-dir", filepath.Join(tmp, "data"),
		"--bot-name", ghApp.BotLogin, "--sandbox-image", o.Image,
		// The demo's tasks are its own sample's, on the user's machine:
		// no tenant's container is kept from the services the machine
		// listens to, which would otherwise stop the demo from starting.
		"--skip-reach-probe"}
	if o.Executor != "" {
		w.Args = append(w.Args, "--sandbox-executor", o.Executor)
	}
	if w.RDB, err = queue.Connect(o.RedisURL); err != nil {
		return err
	}
	w.closers = append(w.closers, func() { w.RDB.Close() })
	w.Store = queue.NewStore(w.RDB)
	return nil
}

// Attach points the world at the intake serving webhook. GitHub echoes
// the App's own comments and pull requests as webhooks too; the intake
// must ignore them.
func (w *World) Attach(webhook string) {
	w.Webhook = webhook
	w.Sim.SetWebhookURL(webhook)
}

// Close stops what Start started, last first.
func (w *World) Close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
	w.closers = nil
}

// DeliverComment has login comment body on the issue, delivered to the
// intake as GitHub would, and returns the comment's and the queued task's
// ids.
func (w *World) DeliverComment(ctx context.Context, login, body string) (comment int64, task string, err error) {
	comment, resp, err := w.Sim.DeliverIssueComment(ctx, w.Webhook, w.Repo, w.Issue, login, body)
	if err != nil {
		return 0, "", fmt.Errorf("deliver the comment: %w", err)
	}
	defer resp.Body.Close()
	var answer struct {
		Task string `json:"task"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusAccepted || answer.Task == "" {
		return 0, "", fmt.Errorf("the webhook was not accepted: %s (%v)", resp.Status, err)
	}
	return comment, answer.Task, nil
}

// Wait polls the task's record until it is final, calling progress on
// every change of state or step.
func (w *World) Wait(ctx context.Context, id string, timeout time.Duration, progress func(queue.Record)) (queue.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last queue.Record
	var readErr error // the latest failed read: a loaded machine can time one out
	for {
		rec, err := w.Store.Task(ctx, id)
		readErr = err
		if err == nil && (rec.State != last.State || rec.Step != last.Step) {
			progress(rec)
			last = rec
		}
		if err == nil && rec.State.Final() {
			return rec, nil
		}
		select {
		case <-ctx.Done():
			if readErr != nil {
				return last, fmt.Errorf("task %s is still %s (%s) after %s: %w", id, last.State, last.Step, timeout, readErr)
			}
			return last, fmt.Errorf("task %s is still %s (%s) after %s", id, last.State, last.Step, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
