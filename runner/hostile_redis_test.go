package runner_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner"
)

// hostileSetup, run inside the setup container, asks the egress proxy for
// 150 hosts it refuses, each named by 64 KiB: 9.4 MiB of names, past the
// task's bound on Redis (maxHostileGrowth) several times over, were they
// kept whole.
const hostileSetup = `bash -c '
p=${HTTP_PROXY#http://}; h=${p%:*}; port=${p##*:}
name=$(head -c 65536 /dev/zero | tr "\\0" a)
for i in $(seq 1 150); do
  exec 3<>/dev/tcp/$h/$port || continue
  printf "CONNECT h%d%s.example:443 HTTP/1.1\r\nHost: x\r\n\r\n" $i "$name" >&3
  head -c 64 <&3 >/dev/null
  exec 3>&-
done
true'`

// maxHostileGrowth is what one hostile task may add to the shared Redis:
// its trace and audit entries, its record and its transcript.
const maxHostileGrowth = 2 << 20

// A setup that floods the egress proxy with refused, huge host names grows
// the shared Redis (trace, audit log, records) by a bounded amount, and
// the worker's log by a few lines.
func TestHostileSetupGrowsRedisWithinBound(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb, err := queue.Connect(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	audit, err := queue.NewAudit(rdb, queue.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log ostest.SyncBuffer
	policy := quickPolicy + "setup:\n  network: true\n  run:\n    - " + strconv.Quote(hostileSetup) + "\n"
	w := newDockerWorldWith(t, policy, demoScript(t), func(c *runner.Config) {
		c.Server.SetupNetwork = true
		c.Traces = queue.NewTraces(rdb, 0)
		c.Audit = audit
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
		allowHost(t, c, "proxy.golang.org")
	})
	before := usedMemory(t, rdb)
	if err := w.runner.ProcessTask(t.Context(), w.task(t, "H1")); err != nil {
		t.Fatal(err)
	}
	grew := usedMemory(t, rdb) - before
	t.Logf("Redis grew by %d bytes; %d bytes of worker log", grew, len(log.String()))
	if grew > maxHostileGrowth {
		t.Errorf("one hostile task grew Redis by %d bytes; want at most %d", grew, maxHostileGrowth)
	}
	if len(log.String()) > 64<<10 {
		t.Errorf("the worker logged %d bytes for one task; want its refusals cut and counted", len(log.String()))
	}
	events, err := queue.NewTraces(rdb, 0).Trace(t.Context(), "H1")
	if err != nil {
		t.Fatal(err)
	}
	var refusals int
	for _, e := range events {
		if e.Kind == app.TraceRefusal && e.Name == "egress" {
			refusals++
		}
	}
	if refusals < 50 {
		t.Errorf("%d egress refusals traced: the hostile setup did not run as meant\n%s", refusals, w.status("H1"))
	}
}

func usedMemory(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no used_memory in INFO memory:\n%s", info)
	return 0
}
