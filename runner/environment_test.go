package runner_test

import (
	"archive/zip"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/github/githubsim"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
	"github.com/agentbot/agentbot/runner/workspace"
)

// goProxy is a Go module proxy served from a directory in the GOPROXY
// file layout, on the address of the Docker bridge, counting requests.
type goProxy struct {
	dir      string
	url      string
	requests atomic.Int64
}

func newGoProxy(t *testing.T) *goProxy {
	t.Helper()
	iface, err := net.InterfaceByName("docker0")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no docker0 bridge for the test's module proxy: %v", err)
		}
		t.Skipf("no docker0 bridge for the test's module proxy: %v", err)
	}
	addrs, _ := iface.Addrs()
	var gw string
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			gw = ip.IP.String()
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatalf("listen on the bridge: %v", err)
	}
	p := &goProxy{dir: t.TempDir(), url: "http://" + ln.Addr().String()}
	files := http.FileServer(http.Dir(p.dir))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		files.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p
}

// add publishes module path at version with the given files.
func (p *goProxy) add(t *testing.T, path, version string, files map[string]string) {
	t.Helper()
	dir := filepath.Join(p.dir, filepath.FromSlash(path), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mod := "module " + path + "\n\ngo 1.21\n"
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("list", version+"\n")
	write(version+".info", fmt.Sprintf(`{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version))
	write(version+".mod", mod)
	f, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	files = maps.Clone(files)
	files["go.mod"] = mod
	for name, data := range files {
		w, err := zw.Create(path + "@" + version + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(data))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// tidy runs the host's "go mod tidy" over files against the proxy's
// directory and returns go.mod and go.sum as it leaves them.
func (p *goProxy) tidy(t *testing.T, files map[string]string) (gomod, gosum string) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+p.dir, "GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local",
		"GOMODCACHE="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	return string(mod), string(sum)
}

// memTraces keeps traces in memory.
type memTraces struct {
	mu     sync.Mutex
	events map[string][]app.TraceEvent
}

func (m *memTraces) Append(_ context.Context, id string, e app.TraceEvent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events[id] = append(m.events[id], e)
	return nil
}

func (m *memTraces) Trace(_ context.Context, id string) ([]app.TraceEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events[id], nil
}

// setupDetail is the setup phase's detail in task id's trace.
func (m *memTraces) setupDetail(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.events[id] {
		if e.Kind == app.TracePhase && e.Name == "setup" {
			return e.Detail
		}
	}
	return ""
}

// TestPreparedEnvironmentReachesTheAgent: a Go repository with two
// third-party modules, which setup downloads from a module proxy; the
// agent phase, with no network, fixes the failing test and the checks
// pass. The next task with the same go.sum reuses the environment without
// a request; a changed go.sum builds a new one.
func TestPreparedEnvironmentReachesTheAgent(t *testing.T) {
	sandboxtest.RequireDocker(t)
	proxy := newGoProxy(t)
	proxy.add(t, "example.com/mathx", "v1.0.0", map[string]string{"mathx.go": "package mathx\n\nfunc Add(a, b int) int { return a + b }\n"})
	proxy.add(t, "example.com/textx", "v1.0.0", map[string]string{"textx.go": "package textx\n\nfunc Twice(s string) string { return s + s }\n"})

	files := map[string]string{}
	for _, name := range []string{"stats.go", "stats_test.go", "go.mod"} {
		b, err := os.ReadFile(filepath.Join("../deploy/demo/repo", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	files["deps.go"] = "package stats\n\nimport (\n\t\"example.com/mathx\"\n\t\"example.com/textx\"\n)\n\n" +
		"// Label names a sample twice over.\nfunc Label(s string) string { return textx.Twice(s) }\n\n" +
		"// Add adds two samples.\nfunc Add(a, b int) int { return mathx.Add(a, b) }\n"
	files["go.mod"], files["go.sum"] = proxy.tidy(t, files)
	if !strings.Contains(files["go.sum"], "example.com/mathx") {
		t.Fatalf("go.sum lacks the modules:\n%s", files["go.sum"])
	}
	files[app.PolicyPath] = fmt.Sprintf(`version: 1
checks:
  - {name: test, run: "go test ./..."}
setup: {network: true, run: ["GOPROXY=%s GOSUMDB=off go mod download"]}
paths: {allow: ["**/*.go"]}
`, proxy.url)

	demo := demoScript(t)
	script := demo
	script.Steps = nil
	for range 3 {
		script.Steps = append(script.Steps, demo.Steps...)
	}
	sim, err := githubsim.New(githubsim.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	inst := sim.AddInstallation("acme")
	if err := sim.AddRepo(inst, repo, files); err != nil {
		t.Fatal(err)
	}
	sim.SetPermission(repo, "ada", "write")
	gh, err := github.NewApp(github.Config{AppID: sim.App().ID, PrivateKey: sim.App().PrivateKeyPEM, APIURL: sim.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewServer(t, script)
	client, err := llm.New(llm.Config{BaseURL: model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	envs, err := envcache.Open(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	server := app.DefaultServerConfig()
	server.SetupNetwork = true
	store, traces := newMemStore(), &memTraces{events: map[string][]app.TraceEvent{}}
	r, err := runner.New(runner.Config{
		GitHub: gh, Server: server, Workspaces: workspace.NewManager(t.TempDir(), workspace.Options{}),
		Sandbox: sandboxtest.NewDriver(t), Model: client, Models: app.Models{Edit: "m", Fast: "m"},
		Store: store, Tasks: store, Locks: &memLocks{held: map[string]string{}}, Traces: traces, Envs: envs,
		Bot: workspace.Signature{Name: sim.App().BotLogin, Email: "bot@users.noreply.github.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	fix := func(id string) string {
		t.Helper()
		issue, err := sim.AddIssue(repo, "grace", "Sum drops the first sample "+id, "Sum([1 2 3]) is 5.")
		if err != nil {
			t.Fatal(err)
		}
		comment, err := sim.AddComment(repo, issue, "ada", "/agent fix")
		if err != nil {
			t.Fatal(err)
		}
		tk := app.Task{ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: inst, Repo: repo,
			Number: issue, Verb: app.VerbFix, Requester: "ada", CommentID: comment, ReceivedAt: time.Now().UTC()}
		store.add(tk)
		if err := r.ProcessTask(t.Context(), tk); err != nil {
			t.Fatalf("task %s: %v", id, err)
		}
		if rec := store.record(id); rec.State != app.StateSucceeded {
			t.Fatalf("task %s ended %s (%s); trace %+v", id, rec.State, rec.Step, traces.events[id])
		}
		return traces.setupDetail(id)
	}

	first := fix("T1")
	key, ok := strings.CutPrefix(first, "setup: built ")
	if !ok {
		t.Fatalf("first task's setup: %q, want it built", first)
	}
	fetched := proxy.requests.Load()
	if fetched == 0 {
		t.Fatal("setup made no request to the module proxy")
	}

	if second := fix("T2"); second != "setup: cached "+key {
		t.Errorf("second task's setup: %q, want %q", second, "setup: cached "+key)
	}
	if n := proxy.requests.Load(); n != fetched {
		t.Errorf("the second task made %d module proxy requests, want none", n-fetched)
	}

	if _, err := sim.Commit(repo, "main", "grace", "Record a checksum", map[string]string{
		"go.sum": files["go.sum"] + "example.com/unused v1.0.0/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	}); err != nil {
		t.Fatal(err)
	}
	third := fix("T3")
	if !strings.HasPrefix(third, "setup: built ") || third == first {
		t.Errorf("after go.sum changed, setup: %q, want a new environment (not %s)", third, key)
	}
	if proxy.requests.Load() == fetched {
		t.Error("the new environment was built without the module proxy")
	}
	list, err := envs.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("environments %+v, %v; want 2", list, err)
	}
}
