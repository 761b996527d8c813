package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github/githubsim"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// The demo's sample: a small Go project with a real bug and a failing test
// (sample/repo), the issue describing it (sample/issue.md: its first line is
// the title) and the recorded fix a scripted model plays (sample/model.yaml).
const (
	demoRepo      = "acme/stats"
	demoRequester = "ada"
	demoComment   = "Thanks for the report!\n\n/agent fix"
	// demoTimeout bounds the whole task; the scripted fix takes seconds.
	demoTimeout = 5 * time.Minute
)

// cmdDemo runs the whole product on one machine: a simulated GitHub holding
// the sample repository and its issue, Redis (the one at --redis-url, or a
// private one), and "agentbot serve" with workers, real sandboxes and a
// model — the recorded fix, or the model at AGENTBOT_LLM_BASE_URL. It
// delivers a signed "/agent fix" comment, prints the task's progress, then
// the pull request, its diff and its checks. It fails unless the pull
// request exists with passing checks.
//
// The demo's world (the simulator and the scripted model) ships in the one
// agentbot binary rather than in a second one: whoever tries agentbot runs
// the very binary they would deploy, its serve, worker and sandbox
// executor included, with nothing else to fetch or keep in step. serve and
// worker never start that world; they carry its code only, about 220 KB
// of a 70 MB binary, and it links no package they do not link already.
func cmdDemo(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("demo", env)
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis to use; a private redis-server is started when none answers")
	sample := fs.String("sample", "deploy/demo", "the sample: repo/, issue.md and model.yaml")
	executor := fs.String("sandbox-executor", "", "the static agentbot binary mounted into sandboxes (default: this binary)")
	image := fs.String("sandbox-image", "agentbot-sandbox:dev", "the sandbox image")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	out := env.Stdout
	clock := demoClock{out: out, start: time.Now()}
	url, stopRedis, err := demoRedis(ctx, *redisURL, env)
	if err != nil {
		return err
	}
	defer stopRedis()
	if url == *redisURL {
		clock.step("Redis at %s answers", redactURL(url))
	} else {
		clock.step("no Redis at %s; started a private redis-server at %s", redactURL(*redisURL), url)
	}
	w, err := startDemo(ctx, demoOptions{redisURL: url, sample: *sample, executor: *executor, image: *image, env: env})
	if err != nil {
		return err
	}
	defer w.close()
	clock.step("simulated GitHub at %s: %s, issue #%d %q", w.sim.URL(), w.repo, w.issue, w.title)
	clock.step("agentbot serve with workers, sandbox image %s; model: %s", *image, w.model)
	clock.step("@%s comments on #%d: %q", demoRequester, w.issue, demoComment)
	_, id, err := w.deliverComment(ctx, demoRequester, demoComment)
	if err != nil {
		return err
	}
	clock.step("queued as task %s", id)
	rec, err := w.wait(ctx, id, demoTimeout, func(r queue.Record) {
		clock.step("  %-9s %s", r.State, r.Step)
	})
	if err != nil {
		return err
	}
	pr, err := w.printResult(out, rec, clock)
	if err != nil {
		return err
	}
	clock.step("demo passed: /agent fix on %s#%d became pull request #%d, and its checks pass", w.repo, w.issue, pr)
	return nil
}

// demoClock prints the demo's steps, each after the time since it began,
// so that a slow step shows where the time goes.
type demoClock struct {
	out   io.Writer
	start time.Time
}

func (c demoClock) step(format string, args ...any) {
	fmt.Fprintf(c.out, "[%6.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

// demoOptions configure startDemo.
type demoOptions struct {
	redisURL string
	sample   string
	executor string
	image    string
	// files replace or add files of the sample repository (tests).
	files map[string]string
	// script replaces the sample's recorded model (tests).
	script *llmtest.Script
	// noWorkers starts the intake only (tests start workers apart).
	noWorkers bool
	// workerFlags are added to the workers' flags (tests).
	workerFlags []string
	env         Env
}

// demoWorld is the running demo: the simulator, the model and serve.
type demoWorld struct {
	sim     *githubsim.Server
	simDir  string
	repo    string
	issue   int
	title   string
	model   string
	llm     *llmtest.Server // the scripted model, when one plays
	webhook string
	// workerArgs and workerEnv configure a worker for this world, as serve's
	// own workers are.
	workerArgs   []string
	workerEnv    map[string]string
	installation int64
	rdb          *redis.Client
	store        *queue.Store
	closers      []func()
}

// startDemo builds the world and starts serve with workers against it.
func startDemo(ctx context.Context, o demoOptions) (*demoWorld, error) {
	w := &demoWorld{repo: demoRepo}
	if err := w.start(ctx, o); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *demoWorld) start(ctx context.Context, o demoOptions) error {
	files, err := readTree(filepath.Join(o.sample, "repo"))
	if err != nil {
		return fmt.Errorf("demo sample: %w", err)
	}
	maps.Copy(files, o.files)
	issue, err := os.ReadFile(filepath.Join(o.sample, "issue.md"))
	if err != nil {
		return fmt.Errorf("demo sample: %w", err)
	}
	title, body, _ := strings.Cut(strings.TrimSpace(string(issue)), "\n")
	w.title = title

	tmp, err := os.MkdirTemp("", "agentbot-demo-")
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() { os.RemoveAll(tmp) })
	w.simDir = filepath.Join(tmp, "github")
	if err := os.Mkdir(w.simDir, 0o700); err != nil {
		return err
	}
	if w.sim, err = githubsim.New(githubsim.Options{Dir: w.simDir}); err != nil {
		return err
	}
	w.closers = append(w.closers, func() { w.sim.Close() })
	w.installation = w.sim.AddInstallation("acme")
	if err := w.sim.AddRepo(w.installation, w.repo, files); err != nil {
		return err
	}
	if w.issue, err = w.sim.AddIssue(w.repo, "grace", title, strings.TrimSpace(body)); err != nil {
		return err
	}
	if err := w.sim.SetPermission(w.repo, demoRequester, "write"); err != nil {
		return err
	}
	ghApp := w.sim.App()
	keyFile := filepath.Join(tmp, "app.pem")
	if err := os.WriteFile(keyFile, ghApp.PrivateKeyPEM, 0o600); err != nil {
		return err
	}

	llmURL, llmKey := o.env.Getenv("AGENTBOT_LLM_BASE_URL"), o.env.Getenv("AGENTBOT_LLM_API_KEY")
	w.model = "the model at " + llmURL
	if llmURL == "" || o.script != nil {
		script := o.script
		if script == nil {
			s, err := llmtest.Load(filepath.Join(o.sample, "model.yaml"))
			if err != nil {
				return fmt.Errorf("demo sample: %w", err)
			}
			script = &s
		}
		srv, err := llmtest.Start(*script)
		if err != nil {
			return err
		}
		w.closers = append(w.closers, srv.Close)
		w.llm = srv
		llmURL, llmKey, w.model = srv.URL(), "", "scripted, playing the recorded fix (set AGENTBOT_LLM_BASE_URL for a real model)"
	}

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	w.workerEnv = map[string]string{"AGENTBOT_LLM_BASE_URL": llmURL, "AGENTBOT_LLM_API_KEY": llmKey,
		"AGENTBOT_MODEL": o.env.Getenv("AGENTBOT_MODEL"), "AGENTBOT_FAST_MODEL": o.env.Getenv("AGENTBOT_FAST_MODEL")}
	w.workerArgs = []string{"--redis-url", o.redisURL, "--app-id", strconv.FormatInt(ghApp.ID, 10),
		"--private-key-file", keyFile, "--github-url", w.sim.APIURL(), "--data-dir", filepath.Join(tmp, "data"),
		"--bot-name", ghApp.BotLogin, "--sandbox-image", o.image,
		// The demo's tasks are its own sample's, on the user's machine:
		// no tenant's container is kept from the services the machine
		// listens to, which would otherwise stop the demo from starting.
		"--skip-reach-probe"}
	if o.executor != "" {
		w.workerArgs = append(w.workerArgs, "--sandbox-executor", o.executor)
	}
	// The status comment links the task's live page on the demo's intake,
	// under a secret of the demo's own.
	w.workerEnv["AGENTBOT_TASK_PAGE_SECRET"] = rand.Text() + rand.Text()
	w.workerArgs = append(w.workerArgs, "--public-url", "http://"+addr)
	w.workerArgs = append(w.workerArgs, o.workerFlags...)
	serveEnv := o.env
	serveEnv.Getenv = func(key string) string {
		if key == "AGENTBOT_WEBHOOK_SECRET" {
			return ghApp.WebhookSecret
		}
		return w.workerEnv[key] // the demo's serve is configured by its arguments alone
	}
	serveEnv.Stdout, serveEnv.Stderr = io.Discard, io.Discard
	if o.env.Getenv("AGENTBOT_DEMO_LOGS") != "" {
		serveEnv.Stderr = o.env.Stderr
	}
	// The demo ends with its task: no admin pages to hold a port for.
	args := append([]string{"--addr", addr, "--admin-addr", "off"}, w.workerArgs...)
	if o.noWorkers {
		args = append(args, "--no-workers")
	}
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = cmdServe(serveCtx, args, serveEnv)
	}()
	w.closers = append(w.closers, func() { stopServe(); <-served })
	base := "http://" + addr
	if err := waitHealthy(ctx, base+"/healthz", served); err != nil {
		stopServe()
		<-served
		return fmt.Errorf("%w (serve: %v)", err, serveErr)
	}
	w.webhook = base + "/webhook"
	// GitHub echoes the App's own comments and pull requests as webhooks;
	// the intake must ignore them.
	w.sim.SetWebhookURL(w.webhook)
	if w.rdb, err = queue.Connect(o.redisURL); err != nil {
		return err
	}
	w.closers = append(w.closers, func() { w.rdb.Close() })
	w.store = queue.NewStore(w.rdb)
	return nil
}

// close stops what startDemo started, last first.
func (w *demoWorld) close() {
	for i := len(w.closers) - 1; i >= 0; i-- {
		w.closers[i]()
	}
	w.closers = nil
}

// deliverComment has login comment body on the issue, delivered to the
// intake as GitHub would, and returns the comment's and the queued task's
// ids.
func (w *demoWorld) deliverComment(ctx context.Context, login, body string) (comment int64, task string, err error) {
	comment, resp, err := w.sim.DeliverIssueComment(ctx, w.webhook, w.repo, w.issue, login, body)
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

// wait polls the task's record until it is final, calling progress on
// every change of state or step.
func (w *demoWorld) wait(ctx context.Context, id string, timeout time.Duration, progress func(queue.Record)) (queue.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last queue.Record
	var readErr error // the latest failed read: a loaded machine can time one out
	for {
		rec, err := w.store.Task(ctx, id)
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

// printResult prints the pull request, its body, its diff and its checks,
// and returns its number; it fails unless the task succeeded with passing
// checks.
func (w *demoWorld) printResult(out io.Writer, rec queue.Record, clock demoClock) (int, error) {
	if rec.State != app.StateSucceeded {
		for _, c := range w.sim.Comments(w.repo, w.issue) {
			fmt.Fprintf(out, "\n--- comment by %s\n%s\n", c.Author, c.Body)
		}
		return 0, fmt.Errorf("the task ended %s: %s", rec.State, rec.Step)
	}
	prs := w.sim.PullRequests(w.repo)
	if len(prs) != 1 {
		return 0, fmt.Errorf("%d pull requests; want 1", len(prs))
	}
	pr := prs[0]
	fmt.Fprintf(out, "\npull request #%d: %s/%s/pull/%d\n%s → %s: %s\n", pr.Number, w.sim.URL(), w.repo, pr.Number, pr.Pull.Head, pr.Pull.Base, pr.Title)
	fmt.Fprintf(out, "\n--- body\n%s\n", pr.Body)
	diff, err := exec.Command("git", "--git-dir", filepath.Join(w.simDir, filepath.FromSlash(w.repo)+".git"),
		"diff", pr.Pull.Base+"..."+pr.Pull.Head).Output()
	if err != nil {
		return 0, fmt.Errorf("diff of the pull request: %w", err)
	}
	fmt.Fprintf(out, "--- diff\n%s\n", diff)
	runs := w.sim.CheckRuns(w.repo)
	ok := len(runs) > 0
	for _, c := range runs {
		clock.step("check run %s: %s %s — %s", c.Name, c.Status, c.Conclusion, c.Title)
		ok = ok && c.Conclusion == string(app.ConclusionSuccess)
	}
	if !ok {
		return 0, errors.New("the pull request's checks did not pass")
	}
	return pr.Number, nil
}

// readTree reads every file under dir, keyed by slash-separated path.
func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}

// demoRedis returns the URL of a Redis that answers: url's own, or a
// private redis-server started on a free port, stopped by the returned
// func.
func demoRedis(ctx context.Context, url string, env Env) (string, func(), error) {
	if pingRedis(ctx, url) == nil {
		return url, func() {}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New("no Redis answers at " + url + " and redis-server is not installed (make deps installs it)")
	}
	addr, err := freeAddr()
	if err != nil {
		return "", nil, err
	}
	host, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "agentbot-demo-redis-")
	if err != nil {
		return "", nil, fmt.Errorf("redis dir: %w", err)
	}
	cmd := exec.Command(bin, "--bind", host, "--port", port, "--dir", dir,
		"--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("start redis-server: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	url = "redis://" + addr + "/0"
	for deadline := time.Now().Add(10 * time.Second); pingRedis(ctx, url) != nil; {
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("the private redis-server did not answer within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url, stop, nil
}

// pingRedis reports whether a Redis answers at url. It dials first, so that
// an address where nothing listens is an error here rather than a line of
// go-redis's own dial-failure logging on the demo's output.
func pingRedis(ctx context.Context, url string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return fmt.Errorf("parse redis url: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, opt.Network, opt.Addr)
	if err != nil {
		return err
	}
	conn.Close()
	rdb, err := queue.Connect(url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	return rdb.Ping(ctx).Err()
}

// freeAddr returns a loopback address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port), nil
}

// waitHealthy polls url until it answers 200, the server exits (served is
// closed), or 10s pass.
func waitHealthy(ctx context.Context, url string, served <-chan struct{}) error {
	c := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case <-served:
			return errors.New("serve exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("%s not healthy after 10s", url)
}
