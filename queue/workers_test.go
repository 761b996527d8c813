package queue

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/queuetest"
	"github.com/agentbot/agentbot/queue/redistest"
)

// workerEnv makes the test binary a worker process: "QUEUE_URL GITHUB_URL
// NAME". Each worker process stands for a worker host.
const workerEnv = "AGENTBOT_QUEUE_TEST_WORKER"

// Keys of the GitHub stand-in, a Redis of its own that outlives workers.
const (
	prsKey  = "prs"  // hash: task id → the worker that opened its pull request
	runsKey = "runs" // hash: task id → runs that got as far as the pull request
)

// githubHandler works on a task for d, then opens its pull request unless
// one exists, as the runner does.
type githubHandler struct {
	gh   redis.UniversalClient
	name string
	d    time.Duration
}

func (h *githubHandler) ProcessTask(ctx context.Context, t app.Task) error {
	select {
	case <-time.After(h.d):
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := h.gh.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HIncrBy(ctx, runsKey, t.ID, 1)
		p.HSetNX(ctx, prsKey, t.ID, h.name)
		return nil
	})
	return err
}

// TestHelperWorkerProcess is the body of a worker process started by
// TestManyWorkerProcesses; on its own it does nothing.
func TestHelperWorkerProcess(t *testing.T) {
	spec := os.Getenv(workerEnv)
	if spec == "" {
		t.Skip("a worker process of TestManyWorkerProcesses")
	}
	f := strings.Fields(spec)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	rdb, gh := connectURL(t, f[0]), connectURL(t, f[1])
	srv := NewServer(rdb, &githubHandler{gh: gh, name: f[2], d: 500 * time.Millisecond},
		ServerConfig{Concurrency: 2, ShutdownTimeout: 5 * time.Second, Logger: quiet})
	if err := srv.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestManyWorkerProcesses runs 40 tasks on 4 worker processes; one is
// killed and one stopped mid-run, and every task still ends exactly once.
func TestManyWorkerProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a killed worker's leases are told from live ones only 10 s on")
	}
	ctx := t.Context()
	qs, ghs := redistest.Start(t), redistest.Start(t)
	// The workers' own clients and the test's: patient, as the four
	// processes and their tasks load the machine.
	queueURL, ghURL := redistest.Patient(qs.URL), redistest.Patient(ghs.URL)
	rdb, gh := connectURL(t, queueURL), connectURL(t, ghURL)
	c := NewClient(rdb)
	const tasks = 40
	for i := range tasks {
		if _, err := c.Enqueue(ctx, sampleTask(fmt.Sprintf("t%02d", i), time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	start := func(name string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWorkerProcess$", "-test.count=1")
		// Each worker has a directory of its own, as on its own host.
		cmd.Env = append(os.Environ(), workerEnv+"="+queueURL+" "+ghURL+" "+name, "TMPDIR="+t.TempDir())
		if err := cmd.Start(); err != nil {
			t.Fatalf("start worker %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
		return cmd
	}
	workers := make([]*exec.Cmd, 4)
	for i := range workers {
		workers[i] = start(fmt.Sprint("w", i))
	}
	prs := func() int64 {
		n, err := gh.HLen(ctx, prsKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitUntil(t, 30*time.Second, "the first pull requests", func() bool { return prs() >= 8 })

	// w0's host dies; w1 is stopped for an upgrade and finishes what it runs.
	if err := workers[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = workers[0].Wait() // killed: the error says so
	killed := time.Now()
	if err := workers[1].Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := workers[1].Wait(); err != nil {
		t.Errorf("the worker stopped with SIGTERM exited with %v; want 0", err)
	}
	// What w0 ran comes back once asynq's recoverer finds its lease expired
	// 30 s ago, about a minute on; a worker starting then (w0's host back)
	// recovers it at once, where the others look only once a minute. The
	// test lets that minute pass on w0's leases alone.
	expireDeadLeases(t, rdb, killed)
	start("w0-again")
	waitUntil(t, 3*time.Minute, "every task's pull request", func() bool { return prs() == tasks })
	t.Logf("all %d tasks ended %s after a worker was killed", tasks, time.Since(killed).Round(time.Second))

	runs, err := gh.HGetAll(ctx, runsKey).Result()
	if err != nil {
		t.Fatal(err)
	}
	again := 0
	for i := range tasks {
		if runs[fmt.Sprintf("t%02d", i)] != "1" {
			again++
		}
	}
	t.Logf("%d of %d tasks reached their pull request more than once (found it open)", again, tasks)
	if n := prs(); n != tasks {
		t.Errorf("%d pull requests; want %d", n, tasks)
	}
	// Nothing is left in the queue, failed or waiting.
	info, err := asynq.NewInspectorFromRedisClient(rdb).GetQueueInfo(DefaultQueue)
	if err != nil {
		t.Fatal(err)
	}
	if left := info.Pending + info.Active + info.Retry + info.Archived + info.Scheduled; left != 0 {
		t.Errorf("queue left with %+v; want empty", info)
	}
}

// expireDeadLeases ends the leases of the worker killed at killed, once
// the live workers, which take 0.5 s a task, have extended theirs past the
// dead one's.
func expireDeadLeases(t *testing.T, rdb *redis.Client, killed time.Time) {
	t.Helper()
	time.Sleep(time.Until(killed.Add(10 * time.Second)))
	n, err := queuetest.ExpireLeases(t.Context(), rdb, DefaultQueue, killed.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d leases of the killed worker expired", n)
}
