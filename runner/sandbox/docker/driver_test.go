package docker_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// workerEnv turns the test binary into a worker that holds a lease in the
// Redis at AGENTBOT_TEST_REDIS, starts one sandbox, prints its id and waits
// to be killed (TestOrphanSweepByLease).
const workerEnv = "AGENTBOT_TEST_SANDBOX_WORKER"

// leaseTTL is the workers' lease TTL in TestOrphanSweepByLease: short, and
// still three refreshes long on a loaded machine.
const leaseTTL = 3 * time.Second

func TestMain(m *testing.M) {
	if id := os.Getenv(workerEnv); id != "" {
		os.Exit(runWorker(id))
	}
	// The tests mostly wait on Docker: more run at once than there are
	// cores.
	ostest.MinParallel(4)
	sandboxtest.Main(m)
}

func runWorker(workerID string) int {
	ctx := context.Background()
	err := func() error {
		rdb, err := queue.Connect(os.Getenv("AGENTBOT_TEST_REDIS"))
		if err != nil {
			return err
		}
		leases := queue.NewWorkerLeases(rdb, leaseTTL)
		if err := leases.Hold(ctx, workerID, "test worker"); err != nil {
			return err
		}
		go leases.Keep(ctx, workerID, "test worker", func(err error) { fmt.Fprintln(os.Stderr, err) })
		d, err := docker.New(ctx, docker.Options{Image: os.Getenv("AGENTBOT_SANDBOX_IMAGE"), WorkerID: workerID, ExecutorPath: os.Getenv("AGENTBOT_TEST_SANDBOX_EXECUTOR")})
		if err != nil {
			return err
		}
		c, err := d.Start(ctx, sandbox.Spec{TaskID: "orphan", WorkTree: os.Getenv("AGENTBOT_TEST_TREE")})
		if err != nil {
			return err
		}
		fmt.Println(c.Name())
		select {} // until SIGKILL
	}()
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// shell runs a shell line in c and returns its result.
func shell(t *testing.T, c sandbox.Box, line string) sandbox.Result {
	t.Helper()
	return sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: line, Timeout: time.Minute})
}

func TestRunBasics(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	tree := sandboxtest.WorkTree(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree, Env: []string{"GREETING=hello"}})

	res := shell(t, c, `echo "$GREETING from $(pwd)"; echo oops >&2; exit 7`)
	if got := string(res.Stdout); got != "hello from /workspace\n" || string(res.Stderr) != "oops\n" || res.ExitCode != 7 {
		t.Errorf("got exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The tree is shared with the host: what one writes the other reads.
	if err := os.WriteFile(filepath.Join(tree, "from-host"), []byte("host"), 0o644); err != nil {
		t.Fatal(err)
	}
	shell(t, c, "mkdir sub && cat from-host > sub/from-sandbox")
	if b, err := os.ReadFile(filepath.Join(tree, "sub", "from-sandbox")); err != nil || string(b) != "host" {
		t.Errorf("host reads %q, %v", b, err)
	}
	// A refused request is an error and leaves the sandbox usable.
	if _, err := c.Run(context.Background(), sandbox.Cmd{Argv: []string{"ls"}, Dir: "../etc"}); !errors.Is(err, sandbox.ErrInvalidCmd) {
		t.Errorf("dir outside the tree: err = %v", err)
	}
	if res := shell(t, c, "echo ok"); string(res.Stdout) != "ok\n" {
		t.Errorf("after a refused request: %+v", res)
	}
	// The Go toolchain works offline, with its caches on the tmpfs home,
	// seeded as setup seeds an environment's.
	shell(t, c, envcache.SeedHome+" && printf 'module m\\ngo 1.22\\n' > go.mod && printf 'package main\\nfunc main(){ println(\"built\") }\\n' > main.go")
	res = sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: "go run .", Timeout: 10 * time.Minute})
	if res.ExitCode != 0 || string(res.Stderr) != "built\n" {
		t.Errorf("go run: exit %d timed out %v stderr %q", res.ExitCode, res.TimedOut, res.Stderr)
	}
}

func TestStartRefusesBadSpec(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	tests := []struct {
		name string
		spec sandbox.Spec
		want string
	}{
		{"no task", sandbox.Spec{WorkTree: t.TempDir()}, "TaskID is required"},
		{"missing tree", sandbox.Spec{TaskID: "t", WorkTree: filepath.Join(t.TempDir(), "nope")}, "is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := d.Start(context.Background(), tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewRefusesMissingImage(t *testing.T) {
	t.Parallel()
	sandboxtest.RequireDocker(t)
	for image, hint := range map[string]string{
		"agentbot-no-such-image:python":   "build-offline.sh python agentbot-no-such-image:python",
		"agentbot-no-such-image:dev":      "build-offline.sh go agentbot-no-such-image:dev",
		"localhost:5000/agentbot-no-such": "build-offline.sh go|python|node localhost:5000/agentbot-no-such",
	} {
		_, err := docker.New(context.Background(), docker.Options{Image: image, WorkerID: "w", ExecutorPath: sandboxtest.Executor(t)})
		if err == nil || !strings.Contains(err.Error(), hint) {
			t.Errorf("New(%s) = %v, want the hint %q", image, err, hint)
		}
	}
}

// hostAddrs returns the bridge gateway and the host's first outside address.
func hostAddrs(t *testing.T) (gateway, host string) {
	t.Helper()
	gateway = sandboxtest.BridgeGateway(t)
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && ip.IP.String() != gateway {
			return gateway, ip.IP.String()
		}
	}
	t.Fatal("the host has no outside IPv4 address")
	return "", ""
}

func TestNoNetwork(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	redis := redistest.Start(t)
	_, redisPort, _ := net.SplitHostPort(redis.Addr)
	// An open port on every host address, standing for any service of the host.
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	openPort := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	gateway, hostIP := hostAddrs(t)
	connect := func(host, port string) string {
		return fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s' 2>/dev/null", host, port)
	}
	tree := sandboxtest.WorkTree(t)

	// The probe works: the setup container, on a bridge, reaches the host.
	setup := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree, Network: true})
	if res := shell(t, setup, connect(gateway, openPort)); res.ExitCode != 0 {
		t.Fatalf("control: the setup container cannot reach %s:%s (exit %d); the probe proves nothing", gateway, openPort, res.ExitCode)
	}

	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree})
	probes := []struct{ name, line string }{
		{"redis via 127.0.0.1", connect("127.0.0.1", redisPort)},
		{"redis via the bridge gateway", connect(gateway, redisPort)},
		{"redis via the host address", connect(hostIP, redisPort)},
		{"open port via the bridge gateway", connect(gateway, openPort)},
		{"open port via the host address", connect(hostIP, openPort)},
		{"cloud metadata", connect("169.254.169.254", "80")},
		{"DNS lookup", "timeout 5 getent hosts deb.debian.org"},
	}
	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			if res := shell(t, c, p.line); res.ExitCode == 0 {
				t.Errorf("%s succeeded from the sandbox", p.line)
			}
		})
	}
	if res := shell(t, c, "ip -o link 2>/dev/null || ls /sys/class/net"); !strings.Contains(string(res.Stdout), "lo") || strings.Contains(string(res.Stdout), "eth0") {
		t.Errorf("network interfaces: %q, want only lo", res.Stdout)
	}
}

func TestForkBombStoppedByPidsLimit(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{Pids: 64})
	res := sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: "b() { b | b & }; b; sleep 30", Timeout: 5 * time.Second})
	// The shell at the head fails too once no pid is left, or else the
	// timeout stops it; either way the executor answers.
	if res.ExitCode == 0 {
		t.Errorf("fork bomb exited 0")
	}
	if !strings.Contains(string(res.Stderr), "Cannot fork") {
		t.Errorf("fork bomb never hit the pids limit; stderr begins %q", res.Stderr[:min(len(res.Stderr), 200)])
	}
	// The host still forks and the sandbox is clean and usable again.
	if err := exec.Command("true").Run(); err != nil {
		t.Errorf("host cannot run a process after the bomb: %v", err)
	}
	requireClean(t, c)
	// A bomb in its own session, left running by a command that exits 0,
	// is gone as well before the next command starts.
	res = shell(t, c, "setsid sh -c 'b() { b | b & }; b' </dev/null >/dev/null 2>&1 & sleep 2; exit 0")
	if res.ExitCode != 0 {
		t.Errorf("the command that left a bomb behind: exit %d, stderr %q", res.ExitCode, res.Stderr)
	}
	requireClean(t, c)
}

// requireClean checks that c runs no process but its init and executor,
// and that a command may fork as many as it likes up to the pids limit.
func requireClean(t *testing.T, c sandbox.Box) {
	t.Helper()
	res := shell(t, c, "ps -e --no-headers | wc -l")
	// docker-init, the executor, sh, ps and wc.
	if n := strings.TrimSpace(string(res.Stdout)); res.ExitCode != 0 || n != "5" {
		t.Errorf("processes left: %q (exit %d, stderr %q)", n, res.ExitCode, res.Stderr)
	}
	res = shell(t, c, "for i in $(seq 40); do sleep 0.2 & done; wait; echo forked")
	if res.ExitCode != 0 || string(res.Stdout) != "forked\n" {
		t.Errorf("forty processes: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func TestMemoryHogKilledAndReported(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{Memory: 128 << 20})
	res := shell(t, c, "dd if=/dev/zero of=/dev/null bs=512M count=1")
	if !res.OOMKilled || res.ExitCode != 137 {
		t.Errorf("memory hog: exit %d oom %v stderr %q; want 137, out of memory", res.ExitCode, res.OOMKilled, res.Stderr)
	}
	// A command killed by a plain SIGKILL is not reported as out of memory.
	if res := shell(t, c, "kill -9 $$"); res.OOMKilled || res.ExitCode != 137 {
		t.Errorf("kill -9: exit %d oom %v", res.ExitCode, res.OOMKilled)
	}
}

func TestInfiniteLoopKilledWithItsGroup(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{})
	res := sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: "sleep 1000 & sleep 1001 & while :; do :; done", Timeout: time.Second})
	if !res.TimedOut || res.ExitCode != 137 {
		t.Errorf("loop: exit %d timed out %v, want killed at its timeout", res.ExitCode, res.TimedOut)
	}
	if res := shell(t, c, "ps -eo args --no-headers"); strings.Contains(string(res.Stdout), "sleep 100") {
		t.Errorf("the loop's children survived its timeout:\n%s", res.Stdout)
	}
}

func TestHugeOutputIsCapped(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	// The executor shares this limit: buffering the output would kill it.
	c := sandboxtest.Start(t, d, sandbox.Spec{Memory: 256 << 20})
	const size = 2 << 30
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := shell(t, c, fmt.Sprintf("head -c %d /dev/zero; echo end >&2", size))
	runtime.ReadMemStats(&after)
	if res.ExitCode != 0 || string(res.Stderr) != "end\n" {
		t.Fatalf("exit %d stderr %q", res.ExitCode, res.Stderr)
	}
	if int64(len(res.Stdout))+res.StdoutDropped != size || len(res.Stdout) != sandbox.DefaultOutputLimit {
		t.Errorf("kept %d, dropped %d of %d bytes; want %d kept", len(res.Stdout), res.StdoutDropped, size, sandbox.DefaultOutputLimit)
	}
	if grown := int64(after.HeapSys) - int64(before.HeapSys); grown > 64<<20 {
		t.Errorf("the worker's heap grew by %d MiB", grown>>20)
	}
}

func TestConfinement(t *testing.T) {
	const token = "ghs_SandboxCanary0123456789abcdef"
	// The worker holds the token in its environment and in a file next to the
	// work tree; neither may reach the container.
	t.Setenv("GITHUB_TOKEN", token)
	d := sandboxtest.NewDriver(t)
	tree := sandboxtest.WorkTree(t)
	if err := os.WriteFile(filepath.Join(filepath.Dir(tree), "credentials"), []byte(token), 0o644); err != nil {
		t.Fatal(err)
	}
	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree})

	res := shell(t, c, "id -u; id -g; grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status")
	// The bounding set keeps what the executor needs (setuid, setgid,
	// kill); a non-root process under no-new-privileges can never hold it.
	want := fmt.Sprintf("%d\n%d\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t00000000000000e4\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n", sandbox.UID, sandbox.GID)
	if got := string(res.Stdout); got != want {
		t.Errorf("identity:\n%s\nwant:\n%s", got, want)
	}
	for _, path := range []string{"/etc/evil", "/usr/bin/evil", "/evil", "/agentbot", "/root/evil", "/var/tmp/evil", "/dev/evil", "/proc/sys/kernel/hostname", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if res := shell(t, c, "echo x > "+path); res.ExitCode == 0 {
			t.Errorf("wrote %s", path)
		}
	}
	// Writable: the tree, and the size-limited tmpfs mounts (the IPC one too).
	for _, path := range []string{"/workspace/ok", "/tmp/ok", "$HOME/ok", "/dev/shm/ok"} {
		if res := shell(t, c, "echo x > "+path); res.ExitCode != 0 {
			t.Errorf("cannot write %s: %s", path, res.Stderr)
		}
	}
	// Every process's environment, then every file outside /proc and /sys.
	// Reading the whole image is slow on a busy engine: the search gets more
	// than the usual minute, and running out of time fails on its own line.
	res = sandboxtest.MustRun(t, c, sandbox.Cmd{Timeout: 10 * time.Minute, Shell: "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -F " + token + "; " +
		"rg -uuu -l --no-messages -F " + token + " $(ls -d /* | grep -v -x -e /proc -e /sys); echo done"})
	if res.TimedOut {
		t.Fatal("the token search did not finish in time")
	}
	if string(res.Stdout) != "done\n" {
		t.Errorf("the token is visible in the sandbox:\n%s", res.Stdout)
	}
}

func TestCancellationRemovesContainer(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c, err := d.Start(context.Background(), sandbox.Spec{TaskID: "cancel", WorkTree: sandboxtest.WorkTree(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	if _, err := c.Run(ctx, sandbox.Cmd{Argv: []string{"sleep", "600"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if _, err := c.Run(context.Background(), sandbox.Cmd{Argv: []string{"true"}}); err == nil {
		t.Error("a container with an abandoned command still takes commands")
	}
	// Close runs on the task's cancelled context and still removes it.
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	requireGone(t, c.Name())
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// A container the engine made although its answer never came (the task was
// cancelled while the engine worked) is removed with its overlay volume,
// not left until the worker dies. A proxy in front of the engine loses the
// answer to the create.
func TestLostCreateLeavesNothing(t *testing.T) {
	// Not parallel: it sets DOCKER_HOST.
	var created atomic.Int32
	engine := proxyEngine(t, func(r *http.Response) error {
		if r.Request.Method == http.MethodPost && strings.HasSuffix(r.Request.URL.Path, "/containers/create") && r.StatusCode == http.StatusCreated {
			created.Add(1)
			return errors.New("answer lost")
		}
		return nil
	})
	d := sandboxtest.NewDriver(t)
	tmp := t.TempDir()
	home := sandbox.Overlay{Target: sandbox.Home, Lower: ownedDir(t, filepath.Join(tmp, "lower")),
		Upper: ownedDir(t, filepath.Join(tmp, "upper")), Work: ownedDir(t, filepath.Join(tmp, "work"))}
	task := "lost-" + rand.Text()
	if _, err := d.Start(t.Context(), sandbox.Spec{TaskID: task, WorkTree: sandboxtest.WorkTree(t), Overlays: []sandbox.Overlay{home}}); err == nil {
		t.Fatal("Start succeeded without the engine's answer")
	}
	if created.Load() != 1 {
		t.Fatalf("the engine made %d containers; want 1, whose answer was lost", created.Load())
	}
	byTask := filters.NewArgs(filters.Arg("label", docker.LabelTask+"="+task))
	if list, err := engine.ContainerList(t.Context(), container.ListOptions{All: true, Filters: byTask}); err != nil || len(list) != 0 {
		t.Errorf("containers of the task: %d (%v); want none", len(list), err)
	}
	if vols, err := engine.VolumeList(t.Context(), volume.ListOptions{Filters: byTask}); err != nil || len(vols.Volumes) != 0 {
		t.Errorf("overlay volumes of the task: %d (%v); want none", len(vols.Volumes), err)
	}
}

// An executor that dies ends the sandbox with a clear error. No command can
// kill it (TestCommandCannotForgeItsResult); root outside the sandbox's
// commands, through docker exec, can.
func TestExecutorDeathIsAnError(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{})
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	killed := make(chan error, 1)
	time.AfterFunc(500*time.Millisecond, func() {
		killed <- dockerExec(context.Background(), cli, c.Name(), "0", "sh", "-c",
			`for p in /proc/[0-9]*; do [ "$(cat $p/comm)" = agentbot ] && kill -9 ${p#/proc/}; done; true`)
	})
	_, err = c.Run(context.Background(), sandbox.Cmd{Argv: []string{"sleep", "60"}, Timeout: time.Minute})
	// The container ends with its executor, and may take the killing
	// shell with it (exit 137): what counts is what Run says.
	if err := <-killed; err != nil && !strings.HasSuffix(err.Error(), "exit 137") {
		t.Fatalf("kill the executor: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "executor exited") {
		t.Fatalf("Run = %v, want executor exited", err)
	}
	if _, err := c.Run(context.Background(), sandbox.Cmd{Argv: []string{"true"}}); err == nil {
		t.Error("a sandbox whose executor died takes commands")
	}
}

// Close from elsewhere (a watchdog, a stop command) ends a waiting Run.
func TestCloseDuringRun(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{})
	closed := make(chan error, 1)
	time.AfterFunc(500*time.Millisecond, func() { closed <- c.Close(context.Background()) })
	if _, err := c.Run(context.Background(), sandbox.Cmd{Argv: []string{"sleep", "600"}}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Run = %v, want closed", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close: %v", err)
	}
	requireGone(t, c.Name())
	if _, err := c.Run(context.Background(), sandbox.Cmd{Argv: []string{"true"}}); err == nil {
		t.Error("a closed container takes commands")
	}
}

func requireGone(t *testing.T, id string) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ContainerInspect(context.Background(), id); !cerrdefs.IsNotFound(err) {
		t.Errorf("container %s still exists (inspect: %v)", id, err)
	}
}

// startWorker starts a worker process (runWorker) with its lease in the
// Redis at redisURL and returns it with the id of its sandbox.
func startWorker(t *testing.T, id, redisURL string) (*exec.Cmd, string) {
	t.Helper()
	worker := exec.Command(os.Args[0], "-test.run=^$")
	worker.Env = append(os.Environ(), workerEnv+"="+id,
		"AGENTBOT_TEST_REDIS="+redisURL,
		"AGENTBOT_SANDBOX_IMAGE="+sandboxtest.Image(t),
		"AGENTBOT_TEST_SANDBOX_EXECUTOR="+sandboxtest.Executor(t),
		"AGENTBOT_TEST_TREE="+sandboxtest.WorkTree(t))
	out, err := worker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	worker.Stderr = os.Stderr
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { worker.Process.Kill(); worker.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("worker %s did not start a sandbox: %v", id, err)
	}
	return worker, strings.TrimSpace(line)
}

// A fresh worker's sweep removes the sandbox of a worker whose lease
// expired (killed with SIGKILL), and leaves alone that of a live worker in
// another process, whatever the host's pids say.
func TestOrphanSweepByLease(t *testing.T) {
	sandboxtest.RequireDocker(t)
	redis := redistest.Start(t)
	rdb, err := queue.Connect(redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	leases := queue.NewWorkerLeases(rdb, leaseTTL)
	live, dead := "worker/test-live-"+rand.Text(), "worker/test-dead-"+rand.Text()
	_, liveBox := startWorker(t, live, redis.URL)
	deadWorker, deadBox := startWorker(t, dead, redis.URL)
	if err := deadWorker.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	deadWorker.Wait()
	// The dead worker's lease expires; the live one's, refreshed, does not.
	ctx := t.Context()
	deadline := time.Now().Add(30 * time.Second)
	for {
		held, err := leases.Held(ctx, dead)
		if err != nil {
			t.Fatal(err)
		}
		if !held {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the killed worker's lease never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}

	d := sandboxtest.NewDriver(t)
	// Only this test's workers: the engine is shared with other tests'.
	alive := func(ctx context.Context, w string) (bool, error) {
		if w != live && w != dead {
			return true, nil
		}
		return leases.Held(ctx, w)
	}
	n, err := d.RemoveOrphans(ctx, alive)
	if err != nil || n != 1 {
		t.Errorf("RemoveOrphans = %d, %v; want 1 removed", n, err)
	}
	requireGone(t, deadBox)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if info, err := cli.ContainerInspect(ctx, liveBox); err != nil || info.State == nil || !info.State.Running {
		t.Errorf("the live worker's sandbox: %v, %+v", err, info.State)
	}
	// Redis unreachable: nobody is known dead, nothing is removed.
	redis.Stop()
	if n, err := d.RemoveOrphans(ctx, alive); err == nil || n != 0 {
		t.Errorf("RemoveOrphans without Redis = %d, %v; want nothing removed and an error", n, err)
	}
	if _, err := cli.ContainerInspect(ctx, liveBox); err != nil {
		t.Errorf("the live worker's sandbox without Redis: %v", err)
	}
	// Leave nothing behind.
	if _, err := d.RemoveOrphans(context.Background(), func(_ context.Context, w string) (bool, error) { return w != live, nil }); err != nil {
		t.Error(err)
	}
}

// A command cannot land a huge file on the worker's disk through the work
// tree: a write past the file size limit fails.
func TestHugeFileStoppedByFileSizeLimit(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	tree := sandboxtest.WorkTree(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree})
	res := shell(t, c, "dd if=/dev/zero of=/workspace/huge.bin bs=1M count=512")
	if res.ExitCode == 0 {
		t.Errorf("dd of 512 MiB exited 0; stderr %q", res.Stderr)
	}
	fi, err := os.Stat(filepath.Join(tree, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > docker.DefaultMaxFileSize {
		t.Errorf("huge.bin is %d bytes on the host, over the limit of %d", fi.Size(), docker.DefaultMaxFileSize)
	}
	// The sandbox goes on; a file within the limit is written whole.
	if res := shell(t, c, "rm huge.bin && dd if=/dev/zero of=ok.bin bs=1M count=8 2>/dev/null && stat -c %s ok.bin"); strings.TrimSpace(string(res.Stdout)) != "8388608" {
		t.Errorf("after the refused write: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// A command cannot fill the worker's disk with many files each under the
// file size limit: the executor kills it once the work tree grows past
// Spec.MaxTreeGrowth, while it runs.
func TestManyFilesStoppedByTreeLimit(t *testing.T) {
	t.Parallel()
	const growth = 256 << 20
	// What a command may write between two measurements of the tree, and
	// while the kill lands: the bound holds within this.
	const slack = 192 << 20
	d := sandboxtest.NewDriver(t)
	tree := sandboxtest.WorkTree(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree, MaxTreeGrowth: growth})
	// Under the limit: unaffected.
	if res := shell(t, c, "dd if=/dev/zero of=small.bin bs=1M count=64 2>/dev/null && echo ok"); res.ExitCode != 0 || res.TreeFull || string(res.Stdout) != "ok\n" {
		t.Fatalf("a command under the limit: exit %d, tree full %v, stdout %q, stderr %q", res.ExitCode, res.TreeFull, res.Stdout, res.Stderr)
	}
	for _, tc := range []struct{ name, line string }{
		// 40 files of 64 MiB, each under RLIMIT_FSIZE: 2.5 GiB in all.
		{"many files", "i=0; while [ $i -lt 40 ]; do dd if=/dev/zero of=fill$i.bin bs=1M count=64 2>/dev/null || exit 3; i=$((i+1)); done; echo wrote all"},
		// The same through descriptors opened into a directory that no
		// longer lets anyone but root's DAC_READ_SEARCH look inside.
		{"hidden directory", "mkdir hid && exec 3>hid/f3 4>hid/f4 5>hid/f5 6>hid/f6 7>hid/f7 8>hid/f8 9>hid/f9 && chmod 000 hid && " +
			"for fd in 3 4 5 6 7 8 9; do dd if=/dev/zero bs=1M count=64 2>/dev/null >&$fd || exit 3; done; echo wrote all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := shell(t, c, tc.line)
			if !res.TreeFull || res.ExitCode == 0 || strings.Contains(string(res.Stdout), "wrote all") {
				t.Errorf("filling the tree: exit %d, tree full %v, stdout %q, stderr %q", res.ExitCode, res.TreeFull, res.Stdout, res.Stderr)
			}
			if !strings.Contains(string(res.Stderr), "past its limit of 256.0 MiB") {
				t.Errorf("stderr does not tell why the command was killed: %q", res.Stderr)
			}
			shell(t, c, "chmod -R 755 hid 2>/dev/null; true") // for the host to measure it
			// The tree was empty when the executor started.
			grew := diskUsage(t, tree)
			t.Logf("the tree grew by %d MiB on the host (limit %d MiB) in %s", grew>>20, growth>>20, res.Duration.Round(time.Millisecond))
			if grew > growth+slack {
				t.Errorf("the tree grew by %d MiB on the host, past the limit of %d MiB and %d MiB of slack", grew>>20, growth>>20, slack>>20)
			}
			// The next command runs normally, and can clean up.
			if res := shell(t, c, "rm -rf fill*.bin hid && echo cleaned"); res.ExitCode != 0 || res.TreeFull || string(res.Stdout) != "cleaned\n" {
				t.Errorf("the command after a full tree: exit %d, tree full %v, stdout %q, stderr %q", res.ExitCode, res.TreeFull, res.Stdout, res.Stderr)
			}
		})
	}
}

// diskUsage is the disk space the files under root take on the host, as
// du counts it: allocated blocks.
func diskUsage(t *testing.T, root string) int64 {
	t.Helper()
	var total int64
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		total += fi.Sys().(*syscall.Stat_t).Blocks * 512
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

// proxyEngine puts a proxy in front of the Docker engine for the rest of
// the test (DOCKER_HOST: the test cannot be parallel) whose answers pass
// through modify, where an error loses the answer; it returns a client of
// the engine itself, behind the proxy.
func proxyEngine(t *testing.T, modify func(*http.Response) error) *client.Client {
	t.Helper()
	sandboxtest.RequireDocker(t)
	engine, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	proxy := &httputil.ReverseProxy{
		Rewrite:        func(r *httputil.ProxyRequest) { r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker" },
		Transport:      engine.HTTPClient().Transport,
		ModifyResponse: modify,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	dir, err := os.MkdirTemp("", "engine") // short: a socket's path has 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: proxy}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() }) // after the driver's, which goes through it
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(dir, "sock"))
	return engine
}

// A bridge network removed between the engine's list and its inspection
// (another task's setup network ending) is no longer the host's: a worker
// starting then goes on with the others' gateways instead of stopping.
func TestBridgeGatewaysSkipANetworkRemovedMeanwhile(t *testing.T) {
	// Not parallel: it sets DOCKER_HOST.
	var id atomic.Pointer[string]
	var gone atomic.Int32
	engine := proxyEngine(t, func(r *http.Response) error {
		if n := id.Load(); n != nil && r.Request.Method == http.MethodGet && strings.HasSuffix(r.Request.URL.Path, "/networks/"+*n) {
			gone.Add(1)
			r.StatusCode, r.Status = http.StatusNotFound, "404 Not Found"
			r.Body = io.NopCloser(strings.NewReader(`{"message":"network ` + *n + ` not found"}`))
			r.ContentLength = -1
			r.Header.Del("Content-Length")
		}
		return nil
	})
	created, err := engine.NetworkCreate(t.Context(), "agentbot-gone-"+strings.ToLower(rand.Text()[:8]), network.CreateOptions{Driver: "bridge"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.NetworkRemove(context.Background(), created.ID) })
	id.Store(&created.ID)
	gws, err := sandboxtest.NewDriver(t).BridgeGateways(t.Context())
	if err != nil {
		t.Fatalf("BridgeGateways with a network gone meanwhile: %v", err)
	}
	if gone.Load() != 1 || len(gws) == 0 {
		t.Errorf("the gone network inspected %d times, gateways found %q; want it once, and the default bridge's", gone.Load(), gws)
	}
}
