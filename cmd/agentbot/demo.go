package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/webhook/webhooktest"
)

// demoComment is the command the demo delivers.
const demoComment = "Thanks for the report!\n\n/agent fix the typo in README.md"

// cmdDemo shows the intake end to end on one machine: it uses the Redis at
// --redis-url or starts a private one, runs "serve" in-process, delivers one
// signed issue_comment webhook and prints the task it finds in Redis. It
// fails unless the task is there.
func cmdDemo(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("demo", env)
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis to use; a private redis-server is started when none answers")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	url, stopRedis, err := demoRedis(ctx, *redisURL, env)
	if err != nil {
		return err
	}
	defer stopRedis()

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	secret := make([]byte, 16)
	rand.Read(secret)
	serveEnv := env
	serveEnv.Getenv = func(key string) string {
		if key == "AGENTBOT_WEBHOOK_SECRET" {
			return hex.EncodeToString(secret)
		}
		return "" // the demo's serve is configured by its arguments alone
	}
	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		serveErr = cmdServe(serveCtx, []string{"--addr", addr, "--redis-url", url, "--no-workers"}, serveEnv)
	}()
	defer func() {
		stopServe()
		<-served
	}()
	base := "http://" + addr
	if err := waitHealthy(ctx, base+"/healthz", served); err != nil {
		stopServe()
		<-served
		return fmt.Errorf("%w (serve: %v)", err, serveErr)
	}

	delivery := uuid.NewString()
	fmt.Fprintf(env.Stdout, "delivering issue_comment %s: %q\n", delivery, demoComment)
	reply, err := webhooktest.Deliver(ctx, http.DefaultClient, base+"/webhook", []byte(hex.EncodeToString(secret)),
		"issue_comment", delivery, webhooktest.IssueComment(demoComment))
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "answer: %d %v\n\n", reply.Status, reply.Body)
	id, _ := reply.Body["task"].(string)
	if reply.Status != http.StatusAccepted || id == "" {
		return fmt.Errorf("the webhook was not accepted: %d %v", reply.Status, reply.Body)
	}

	rdb, err := queue.Connect(url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, err := queue.NewStore(rdb).Task(rctx, id)
	if err != nil {
		return fmt.Errorf("the accepted task is not in Redis: %w", err)
	}
	fmt.Fprintln(env.Stdout, "queued in Redis (agentbot tasks show "+id+"):")
	return printTask(env.Stdout, rec, false)
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
	fmt.Fprintf(env.Stdout, "no Redis at the default address; started a private redis-server at %s\n", url)
	for deadline := time.Now().Add(10 * time.Second); pingRedis(ctx, url) != nil; {
		if time.Now().After(deadline) {
			stop()
			return "", nil, errors.New("the private redis-server did not answer within 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url, stop, nil
}

func pingRedis(ctx context.Context, url string) error {
	rdb, err := queue.Connect(url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
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
