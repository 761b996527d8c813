package runner_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/githubapp"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
	"github.com/agentbot/agentbot/runner/workspace"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// The runner's tests run it as a worker does — the GitHub simulator, git,
// the scripted model and the real sandbox executor — with the queue's
// store, tasks and locks kept in memory, so that a test can fail a save
// where a worker would die. They run without Docker: the executor serves
// each sandbox from the test's own process over its work tree
// (sandboxtest.Host), and a test whose tasks start no sandbox has none
// (newWorldWithoutSandboxes). The few tests that need a container —
// setup's network and egress, prepared environments, toolchain images, a
// model that acts as an attacker — run in containers on the local Docker
// engine (newDockerWorld, newEnvWorld); the end-to-end tests run the whole
// worker on it.

// The tests each own their world (githubsim, scripted model, sandboxes) and
// mostly wait on git, the model's server and, for some, Docker: they run
// in parallel, more at once than there are cores.
func TestMain(m *testing.M) {
	ostest.MinParallel(4)
	sandboxtest.Main(m)
}

const repo = "acme/stats"

// quickPolicy's one check needs no Go build.
const quickPolicy = `version: 1
checks:
  - {name: fixed, run: "! grep -q 'i := 1' stats.go"}
paths: {allow: ["**/*.go"]}
`

type world struct {
	sim    *githubsim.Server
	inst   int64
	issue  int
	store  *memStore
	locks  *memLocks
	runner *runner.Runner
	model  *llmtest.Server // what the model was asked
	traces *memTraces
	cfg    runner.Config     // what runner was made with
	host   *sandboxtest.Host // the sandboxes of a world on the host
}

// newWorld is a world whose tasks run in sandboxes on the host, without
// Docker.
func newWorld(t *testing.T, policy string, script llmtest.Script) *world {
	t.Helper()
	return newWorldWith(t, policy, script, func(*runner.Config) {})
}

// newWorldWith is newWorld with the runner's configuration changed by
// configure before it is built.
func newWorldWith(t *testing.T, policy string, script llmtest.Script, configure func(*runner.Config)) *world {
	t.Helper()
	host := sandboxtest.NewHost(t)
	w := buildWorld(t, policy, script, host, func(c *runner.Config) {
		// A policy that names no image runs on the host's.
		c.Server = c.Server.WithDefaultImage(host.Image())
		configure(c)
	})
	w.host = host
	return w
}

// newDockerWorld is newWorld with sandboxes in containers on the local
// Docker engine; without one the test is skipped, or fails under CI=true.
// It is for the tests a host sandbox cannot stand for: those of setup's
// network and egress proxy, which only a container has, and those whose
// model acts as an attacker (forging a check's pass outside the tree),
// whose commands must never run as a process of the host.
func newDockerWorld(t *testing.T, policy string, script llmtest.Script) *world {
	t.Helper()
	return newDockerWorldWith(t, policy, script, func(*runner.Config) {})
}

// newDockerWorldWith is newDockerWorld with the runner's configuration
// changed by configure before it is built.
func newDockerWorldWith(t *testing.T, policy string, script llmtest.Script, configure func(*runner.Config)) *world {
	t.Helper()
	return buildWorld(t, policy, script, sandboxtest.NewDriver(t), configure)
}

// newWorldWithoutSandboxes is newWorld for a test whose tasks never start
// a sandbox — refusals, status, help, ask: a task that asks for a sandbox
// fails the test.
func newWorldWithoutSandboxes(t *testing.T, policy string, script llmtest.Script) *world {
	t.Helper()
	return buildWorld(t, policy, script, noSandboxes{t}, func(*runner.Config) {})
}

// buildWorld makes a world whose runner starts its sandboxes through
// sandboxes.
func buildWorld(t *testing.T, policyYAML string, script llmtest.Script, sandboxes sandbox.Sandboxes, configure func(*runner.Config)) *world {
	t.Helper()
	files := map[string]string{}
	root := "../deploy/demo/repo"
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files[policy.PolicyPath] = policyYAML
	if policyYAML == "" { // a repository without a policy file
		delete(files, policy.PolicyPath)
	}
	sim, err := githubsim.New(githubsim.Options{Dir: t.TempDir(), AppKey: githubsim.SharedKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	w := &world{sim: sim, inst: sim.AddInstallation("acme"), store: newMemStore(), locks: &memLocks{held: map[string]string{}}, traces: &memTraces{}}
	if err := sim.AddRepo(w.inst, repo, files); err != nil {
		t.Fatal(err)
	}
	if w.issue, err = sim.AddIssue(repo, "grace", "Sum drops the first sample", "Sum([1 2 3]) is 5."); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetPermission(repo, "ada", "write"); err != nil {
		t.Fatal(err)
	}
	gh, err := github.NewApp(github.Config{AppID: sim.App().ID, PrivateKey: sim.App().PrivateKeyPEM, APIURL: sim.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewServer(t, script)
	w.model = model
	client, err := llm.New(llm.Config{BaseURL: model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	w.cfg = runner.Config{
		GitHub: githubapp.New(gh), Server: policy.DefaultServerConfig(), Workspaces: workspace.NewManager(t.TempDir(), workspace.Options{}),
		Sandbox: sandboxes, Model: client, Models: policy.Models{Edit: "m", Fast: "m"},
		Store: w.store, Tasks: w.store, Pulls: w.store, Locks: w.locks, Traces: w.traces,
		Bot: workspace.Signature{Name: sim.App().BotLogin, Email: "bot@users.noreply.github.com"},
	}
	configure(&w.cfg)
	w.runner, err = runner.New(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// task is a "/agent fix" by ada on the world's issue, recorded as intake
// would record it.
func (w *world) task(t *testing.T, id string) app.Task {
	t.Helper()
	return w.command(t, id, "ada", app.VerbFix)
}

// commandOn is "/agent verb" by login on issue or pull request number,
// recorded as intake would record it, after edit (when not nil) adds
// what intake knows besides.
func (w *world) commandOn(t *testing.T, id string, number int, login string, verb app.Verb, edit func(*app.Task)) app.Task {
	t.Helper()
	comment, err := w.sim.AddComment(repo, number, login, "/agent "+string(verb))
	if err != nil {
		t.Fatal(err)
	}
	tk := app.Task{ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: w.inst, Repo: repo,
		Number: number, Verb: verb, Requester: login, CommentID: comment, ReceivedAt: time.Now().UTC()}
	if edit != nil {
		edit(&tk)
	}
	w.store.add(tk)
	return tk
}

// status is the body of task id's status comment.
func (w *world) status(id string) string {
	for _, c := range w.sim.Comments(repo, w.issue) {
		if strings.Contains(c.Body, "agentbot:task="+id) {
			return c.Body
		}
	}
	return ""
}

func demoScript(t testing.TB) llmtest.Script {
	t.Helper()
	s, err := llmtest.Load("../deploy/demo/model.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sandboxesLeft lists the sandboxes of task that are still there: the host
// sandboxes not closed, or the containers not removed.
func (w *world) sandboxesLeft(t *testing.T, task string) string {
	t.Helper()
	if w.host != nil {
		return strings.Join(w.host.Open(task), " ")
	}
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=agentbot.task="+task).CombinedOutput()
	if err != nil {
		t.Fatalf("docker ps: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// noSandboxes are the sandboxes of a test that starts none: asking for
// one fails the test (from whichever goroutine asks) and the task.
type noSandboxes struct{ t *testing.T }

var errNoSandbox = errors.New("this test starts no sandbox")

func (s noSandboxes) Start(context.Context, sandbox.Spec) (sandbox.Box, error) {
	return nil, s.asked("a sandbox")
}

func (s noSandboxes) StartEgress(context.Context, sandbox.EgressSpec) (sandbox.Egress, error) {
	return nil, s.asked("an egress proxy")
}

func (s noSandboxes) ImageID(_ context.Context, ref string) (string, error) {
	return "", s.asked("image " + ref)
}

func (s noSandboxes) Image() string {
	s.asked("the default image")
	return ""
}

func (s noSandboxes) asked(what string) error {
	s.t.Errorf("the task asked for %s: %v", what, errNoSandbox)
	return errNoSandbox
}

// memStore is the queue's store, task list and state in memory. fail,
// when set, may refuse a save, as a worker that dies before it would.
type memStore struct {
	mu      sync.Mutex
	state   map[string][]byte
	recs    []runner.TaskState // oldest first
	pulls   map[string]app.AgentPull
	answers map[string]map[string]app.CIAnswer // by pull request, then head, App and check
	fail    func(key string, state []byte) bool
}

func newMemStore() *memStore { return &memStore{state: map[string][]byte{}} }

func (s *memStore) add(t app.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs, runner.TaskState{Task: t, State: app.StateQueued})
}

func (s *memStore) SaveState(_ context.Context, key string, state []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil && s.fail(key, state) {
		return fmt.Errorf("save %s: the worker died", key)
	}
	s.state[key] = slices.Clone(state)
	return nil
}

func (s *memStore) LoadState(_ context.Context, key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.state[key]), nil
}

// The runner's progress, stop requests and decisions are kept beside
// the loop's state, under the task's id and a suffix.

func (s *memStore) SaveProgress(ctx context.Context, id string, b []byte) error {
	return s.SaveState(ctx, id+":progress", b)
}

func (s *memStore) LoadProgress(ctx context.Context, id string) ([]byte, error) {
	return s.LoadState(ctx, id+":progress")
}

func (s *memStore) RequestStop(ctx context.Context, id, login string) error {
	return s.SaveState(ctx, id+":stop", []byte(login))
}

func (s *memStore) StopRequested(ctx context.Context, id string) (string, error) {
	b, err := s.LoadState(ctx, id+":stop")
	return string(b), err
}

func (s *memStore) RecordDecision(ctx context.Context, id string, b []byte) error {
	return s.SaveState(ctx, id+":decision", b)
}

func (s *memStore) Decision(ctx context.Context, id string) ([]byte, error) {
	return s.LoadState(ctx, id+":decision")
}

// ClaimRefusal lets the first task refused to login on an issue answer.
func (s *memStore) ClaimRefusal(_ context.Context, repo string, number int, login, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprintf("refusal:%s#%d:%s", repo, number, login)
	if holder, ok := s.state[key]; ok {
		return string(holder) == id, nil
	}
	s.state[key] = []byte(id)
	return true, nil
}

func (s *memStore) SetState(_ context.Context, id string, st app.State, step string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.recs {
		if s.recs[i].ID == id {
			s.recs[i].State, s.recs[i].Step = st, step
			return nil
		}
	}
	return app.Errorf(app.ENotFound, "There is no task %q.", id)
}

func (s *memStore) OnIssue(_ context.Context, repo string, number int) ([]runner.TaskState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []runner.TaskState
	for _, r := range slices.Backward(s.recs) {
		if r.Repo == repo && r.Number == number {
			out = append(out, r)
		}
	}
	return out, nil
}

// The runner's records of its pull requests, as queue.Store keeps them.

func (s *memStore) SavePull(_ context.Context, p app.AgentPull) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pulls == nil {
		s.pulls = map[string]app.AgentPull{}
	}
	s.pulls[fmt.Sprintf("%s#%d", p.Repo, p.Number)] = p
	return nil
}

func (s *memStore) Pull(_ context.Context, repo string, number int) (app.AgentPull, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pulls[fmt.Sprintf("%s#%d", repo, number)]
	return p, ok, nil
}

func (s *memStore) CIAnswers(_ context.Context, repo string, number int) ([]app.CIAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.answers[fmt.Sprintf("%s#%d", repo, number)])), nil
}

func (s *memStore) AnswerCI(_ context.Context, repo string, number int, answers []app.CIAnswer) ([]app.CIAnswer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answers == nil {
		s.answers = map[string]map[string]app.CIAnswer{}
	}
	pr := fmt.Sprintf("%s#%d", repo, number)
	if s.answers[pr] == nil {
		s.answers[pr] = map[string]app.CIAnswer{}
	}
	out := make([]app.CIAnswer, len(answers))
	for i, a := range answers {
		key := fmt.Sprintf("%s %d %s", a.Head, a.AppID, a.Check)
		if _, ok := s.answers[pr][key]; !ok {
			s.answers[pr][key] = a
		}
		out[i] = s.answers[pr][key]
	}
	return out, nil
}

func (s *memStore) record(id string) runner.TaskState {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.ID == id {
			return r
		}
	}
	return runner.TaskState{}
}

// memTraces keeps tasks' traces in memory.
type memTraces struct {
	mu     sync.Mutex
	events map[string][]app.TraceEvent
	// seen, when set, is called with every event appended.
	seen func(id string, e app.TraceEvent)
}

func (m *memTraces) Append(_ context.Context, id string, e app.TraceEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.events == nil {
		m.events = map[string][]app.TraceEvent{}
	}
	m.events[id] = append(m.events[id], e.Capped())
	if m.seen != nil {
		m.seen(id, e)
	}
	return nil
}

func (m *memTraces) Trace(_ context.Context, id string) ([]app.TraceEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events[id]), nil
}

// memLocks are the queue's locks without their expiry.
type memLocks struct {
	mu   sync.Mutex
	held map[string]string
}

func (l *memLocks) Lock(_ context.Context, key, owner string, _ time.Duration) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.held[key]; ok {
		return h, nil
	}
	l.held[key] = owner
	return owner, nil
}

func (l *memLocks) Renew(_ context.Context, key, owner string, _ time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[key] == owner, nil
}

func (l *memLocks) Unlock(_ context.Context, key, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] == owner {
		delete(l.held, key)
	}
	return nil
}

func (l *memLocks) holders() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.held)
}

func TestWorkerDeadBetweenPushAndSaveRepushesTheSameCommit(t *testing.T) {
	t.Parallel()
	w := newWorld(t, quickPolicy, demoScript(t))
	ctx := t.Context()
	tk := w.task(t, "T1")
	died := false
	w.store.fail = func(key string, state []byte) bool {
		if key == "T1:progress" && strings.Contains(string(state), `"pushed"`) && !died {
			died = true
			return true
		}
		return false
	}
	if err := w.runner.ProcessTask(ctx, tk); err == nil || !died {
		t.Fatalf("ProcessTask = %v; want the failed save after the push", err)
	}
	pushed, err := w.sim.BranchSHA(repo, "agent/1-sum-drops-the-first-sample")
	if err != nil {
		t.Fatalf("the branch was not pushed before the save failed: %v", err)
	}
	// The commit made again must not differ by its date: let the clock
	// pass a second, git's resolution.
	time.Sleep(1100 * time.Millisecond)
	if err := w.runner.ProcessTask(ctx, tk); err != nil {
		t.Fatalf("resumed task: %v", err)
	}
	if now, _ := w.sim.BranchSHA(repo, "agent/1-sum-drops-the-first-sample"); now != pushed {
		t.Errorf("the branch moved from %s to %s; want the same commit pushed again", pushed, now)
	}
	if rec := w.store.record("T1"); rec.State != app.StateSucceeded {
		t.Errorf("task ended %s (%s); want succeeded", rec.State, rec.Step)
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 1 {
		t.Errorf("%d pull requests; want 1", len(prs))
	}
}

func TestTaskWaitsBehindTheIssuesRunningTask(t *testing.T) {
	t.Parallel()
	w := newWorld(t, quickPolicy, demoScript(t))
	ctx := t.Context()
	if _, err := w.locks.Lock(ctx, fmt.Sprintf("%s#%d", repo, w.issue), "T0", time.Minute); err != nil {
		t.Fatal(err)
	}
	tk := w.task(t, "T1")
	for range 2 { // a second look says nothing new
		err := w.runner.ProcessTask(ctx, tk)
		var wait interface{ RetryAfter() time.Duration }
		if !errors.As(err, &wait) || wait.RetryAfter() <= 0 {
			t.Fatalf("ProcessTask = %v; want an error to run again later", err)
		}
	}
	if rec := w.store.record("T1"); rec.State != app.StateQueued || rec.Step != "waiting behind task T0" {
		t.Errorf("record %s (%s); want queued, waiting behind task T0", rec.State, rec.Step)
	}
	if s := w.status("T1"); !strings.Contains(s, "waiting behind task `T0`") {
		t.Errorf("status comment:\n%s", s)
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 0 {
		t.Fatalf("pull requests %+v while waiting; want none", prs)
	}
	if err := w.locks.Unlock(ctx, fmt.Sprintf("%s#%d", repo, w.issue), "T0"); err != nil {
		t.Fatal(err)
	}
	if err := w.runner.ProcessTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if rec := w.store.record("T1"); rec.State != app.StateSucceeded {
		t.Errorf("task ended %s (%s); want succeeded", rec.State, rec.Step)
	}
	if h := w.locks.holders(); len(h) != 0 {
		t.Errorf("locks held after the task ended: %v", h)
	}
}
