// Package demo is agentbot's whole pipeline on one machine: a simulated
// GitHub holding a sample repository and its issue, Redis, a model (the
// recorded fix, or a real endpoint) and an agentbot serve with workers and
// real sandboxes. Run is "make demo"; World is the demo's outside world,
// which the end-to-end tests start their own wired agentbot against.
//
// The package links the GitHub simulator and the scripted model, so only
// the agentbot-demo binary and tests import it: the agentbot binary that
// is deployed carries neither (cmd/agentbot/testdata/deps.golden).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/localnet"
	"github.com/agentbot/agentbot/queue"
)

// timeout bounds the whole task; the scripted fix takes seconds.
const timeout = 5 * time.Minute

// Config is what Run is given.
type Config struct {
	// RedisURL is used when a Redis answers there; otherwise a private
	// redis-server is started.
	RedisURL string
	// Sample is the sample's directory: repo/, issue.md and model.yaml.
	Sample string
	// Agentbot is the agentbot binary the demo runs "serve" of.
	Agentbot string
	Options
	// Stdout gets the demo's story; Stderr serve's logs when Logs is set.
	Stdout, Stderr io.Writer
	Logs           bool
}

// Run starts the world and "agentbot serve" with workers against it,
// delivers a signed "/agent fix" comment, prints the task's progress, then
// the pull request, its diff and its checks. It fails unless the pull
// request exists with passing checks.
func Run(ctx context.Context, c Config) error {
	clock := clock{out: c.Stdout, start: time.Now()}
	url, stopRedis, err := startRedis(ctx, c.RedisURL)
	if err != nil {
		return err
	}
	defer stopRedis()
	if url == c.RedisURL {
		clock.step("Redis at %s answers", redactURL(url))
	} else {
		clock.step("no Redis at %s; started a private redis-server at %s", redactURL(c.RedisURL), url)
	}
	sample, err := LoadSample(c.Sample)
	if err != nil {
		return err
	}
	o := c.Options
	o.RedisURL = url
	w, err := Start(ctx, sample, o)
	if err != nil {
		return err
	}
	defer w.Close()
	stopServe, err := serve(ctx, c, w)
	if err != nil {
		return err
	}
	defer stopServe()
	clock.step("simulated GitHub at %s: %s, issue #%d %q", w.Sim.URL(), w.Repo, w.Issue, w.Title)
	clock.step("agentbot serve with workers, sandbox image %s; model: %s", o.Image, w.Model)
	clock.step("@%s comments on #%d: %q", Requester, w.Issue, Comment)
	_, id, err := w.DeliverComment(ctx, Requester, Comment)
	if err != nil {
		return err
	}
	clock.step("queued as task %s", id)
	rec, err := w.Wait(ctx, id, timeout, func(r queue.Record) {
		clock.step("  %-9s %s", r.State, r.Step)
	})
	if err != nil {
		return err
	}
	pr, err := w.printResult(c.Stdout, rec, clock)
	if err != nil {
		return err
	}
	clock.step("demo passed: /agent fix on %s#%d became pull request #%d, and its checks pass", w.Repo, w.Issue, pr)
	return nil
}

// serve runs "agentbot serve" with workers against w, as a process of its
// own: the demo runs the very binary that is deployed. The returned func
// stops it.
func serve(ctx context.Context, c Config, w *World) (stop func(), err error) {
	addr, err := localnet.FreeAddr()
	if err != nil {
		return nil, err
	}
	// The demo ends with its task: no admin pages to hold a port for.
	args := append([]string{"serve", "--addr", addr, "--admin-addr", "off", "--public-url", "http://" + addr}, w.Args...)
	cmd := exec.Command(c.Agentbot, args...)
	// serve is configured by its arguments and the world's environment
	// alone, never by an AGENTBOT_ variable of the user's shell.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTBOT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range w.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if c.Logs {
		cmd.Stdout, cmd.Stderr = c.Stderr, c.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start agentbot serve: %w", err)
	}
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = cmd.Wait()
	}()
	stop = func() {
		// SIGTERM: serve hands its running tasks back and removes its
		// sandboxes before it exits.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-served
		}
	}
	base := "http://" + addr
	if err := localnet.WaitHealthy(ctx, base+"/healthz", served); err != nil {
		stop()
		return nil, fmt.Errorf("agentbot serve: %w (%v)", err, serveErr)
	}
	w.Attach(base + "/webhook")
	return stop, nil
}

// clock prints the demo's steps, each after the time since it began, so
// that a slow step shows where the time goes.
type clock struct {
	out   io.Writer
	start time.Time
}

func (c clock) step(format string, args ...any) {
	fmt.Fprintf(c.out, "[%6.1fs] %s\n", time.Since(c.start).Seconds(), fmt.Sprintf(format, args...))
}

// printResult prints the pull request, its body, its diff and its checks,
// and returns its number; it fails unless the task succeeded with passing
// checks.
func (w *World) printResult(out io.Writer, rec queue.Record, clock clock) (int, error) {
	if rec.State != app.StateSucceeded {
		for _, c := range w.Sim.Comments(w.Repo, w.Issue) {
			fmt.Fprintf(out, "\n--- comment by %s\n%s\n", c.Author, c.Body)
		}
		return 0, fmt.Errorf("the task ended %s: %s", rec.State, rec.Step)
	}
	prs := w.Sim.PullRequests(w.Repo)
	if len(prs) != 1 {
		return 0, fmt.Errorf("%d pull requests; want 1", len(prs))
	}
	pr := prs[0]
	fmt.Fprintf(out, "\npull request #%d: %s/%s/pull/%d\n%s → %s: %s\n", pr.Number, w.Sim.URL(), w.Repo, pr.Number, pr.Pull.Head, pr.Pull.Base, pr.Title)
	fmt.Fprintf(out, "\n--- body\n%s\n", pr.Body)
	diff, err := exec.Command("git", "--git-dir", filepath.Join(w.SimDir, filepath.FromSlash(w.Repo)+".git"),
		"diff", pr.Pull.Base+"..."+pr.Pull.Head).Output()
	if err != nil {
		return 0, fmt.Errorf("diff of the pull request: %w", err)
	}
	fmt.Fprintf(out, "--- diff\n%s\n", diff)
	runs := w.Sim.CheckRuns(w.Repo)
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

// startRedis returns the URL of a Redis that answers: url's own, or a
// private redis-server started on a free port, stopped by the returned
// func.
func startRedis(ctx context.Context, url string) (string, func(), error) {
	if pingRedis(ctx, url) == nil {
		return url, func() {}, nil
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", nil, errors.New("no Redis answers at " + url + " and redis-server is not installed (make deps installs it)")
	}
	addr, err := localnet.FreeAddr()
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

// redactURL is url without its password, for the demo's story.
func redactURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(an unparseable URL)"
	}
	return u.Redacted()
}
