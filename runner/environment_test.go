package runner_test

import (
	"archive/zip"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/envcache/registrytest"
	"github.com/agentbot/agentbot/runner/githubapp"
	"github.com/agentbot/agentbot/runner/llm"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
	"github.com/agentbot/agentbot/runner/workspace"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// goProxy is a Go module proxy served from a directory in the GOPROXY
// file layout, on the address of the Docker bridge, counting requests.
type goProxy struct {
	*registrytest.Registry
	dir string
}

func newGoProxy(t testing.TB) *goProxy {
	t.Helper()
	dir := t.TempDir()
	return &goProxy{dir: dir, Registry: registrytest.Serve(t, func(*registrytest.Registry) http.Handler {
		return http.FileServer(http.Dir(dir))
	})}
}

// add publishes module path at version with the given files.
func (p *goProxy) add(t testing.TB, path, version string, files map[string]string) {
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
func (p *goProxy) tidy(t testing.TB, files map[string]string) (gomod, gosum string) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
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

// envWorld is a worker with an environment cache over a Go repository with
// two third-party modules, served by the world's module proxy.
type envWorld struct {
	proxy  *goProxy
	files  map[string]string
	sim    *githubsim.Server
	inst   int64
	store  *memStore
	traces *memTraces
	envs   *envcache.Cache
	runner *runner.Runner
	cfg    runner.Config // what runner was made with
}

func newEnvWorld(t testing.TB, script llmtest.Script) *envWorld {
	t.Helper()
	sandboxtest.RequireDocker(t)
	proxy := newGoProxy(t)
	proxy.add(t, "example.com/mathx", "v1.0.0", map[string]string{"mathx.go": "package mathx\n\nfunc Add(a, b int) int { return a + b }\n"})
	proxy.add(t, "example.com/textx", "v1.0.0", map[string]string{"textx.go": "package textx\n\nfunc Twice(s string) string { return s + s }\n"})
	files := demoFiles(t)
	files["deps.go"] = "package stats\n\nimport (\n\t\"example.com/mathx\"\n\t\"example.com/textx\"\n)\n\n" +
		"// Label names a sample twice over.\nfunc Label(s string) string { return textx.Twice(s) }\n\n" +
		"// Add adds two samples.\nfunc Add(a, b int) int { return mathx.Add(a, b) }\n"
	files["go.mod"], files["go.sum"] = proxy.tidy(t, files)
	if !strings.Contains(files["go.sum"], "example.com/mathx") {
		t.Fatalf("go.sum lacks the modules:\n%s", files["go.sum"])
	}
	files[policy.PolicyPath] = fmt.Sprintf(`version: 1
checks:
  - {name: test, run: "go test ./..."}
setup: {network: true, run: ["GOPROXY=%s GOSUMDB=off go mod download"]}
paths: {allow: ["**/*.go"]}
`, proxy.URL)
	w := newEnvWorldOf(t, script, files, sandboxtest.Image(t), proxy.Host())
	w.proxy = proxy
	return w
}

// demoFiles is the demo repository, whose Sum drops its first sample.
func demoFiles(t testing.TB) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, name := range []string{"stats.go", "stats_test.go", "go.mod"} {
		b, err := os.ReadFile(filepath.Join("../deploy/demo/repo", name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = string(b)
	}
	return files
}

// newEnvWorldOf is a worker with an environment cache and sandboxes of
// image, over a repository holding files, whose setup may reach hosts
// (host:port of the test's registries) through the egress proxy. Its
// sandboxes are containers: a setup's network, the egress proxy, the
// prepared environment's overlays and the toolchain images are what these
// tests are about, and a host sandbox has none of them.
func newEnvWorldOf(t testing.TB, script llmtest.Script, files map[string]string, image string, hosts ...string) *envWorld {
	t.Helper()
	return newEnvWorldIn(t, script, files, image, t.TempDir(), hosts...)
}

// newEnvWorldIn is newEnvWorldOf with its environments kept in envDir.
func newEnvWorldIn(t testing.TB, script llmtest.Script, files map[string]string, image, envDir string, hosts ...string) *envWorld {
	t.Helper()
	w := &envWorld{files: files}
	var err error
	if w.sim, err = githubsim.New(githubsim.Options{Dir: t.TempDir(), AppKey: githubsim.SharedKey()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.sim.Close() })
	w.inst = w.sim.AddInstallation("acme")
	if err := w.sim.AddRepo(w.inst, repo, w.files); err != nil {
		t.Fatal(err)
	}
	w.sim.SetPermission(repo, "ada", "write")
	gh, err := github.NewApp(github.Config{AppID: w.sim.App().ID, PrivateKey: w.sim.App().PrivateKeyPEM, APIURL: w.sim.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewServer(t, script)
	client, err := llm.New(llm.Config{BaseURL: model.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if w.envs, err = envcache.Open(envDir, 0, nil); err != nil {
		t.Fatal(err)
	}
	server := policy.DefaultServerConfig().WithDefaultImage(image)
	server.SetupNetwork = true
	// The registries are the only hosts setup may reach, through the
	// egress proxy.
	for _, h := range hosts {
		allow, err := app.ParseAllowHost(h)
		if err != nil {
			t.Fatal(err)
		}
		server.SetupAllowHosts = append(server.SetupAllowHosts, allow)
	}
	w.store, w.traces = newMemStore(), &memTraces{events: map[string][]app.TraceEvent{}}
	w.cfg = runner.Config{
		GitHub: githubapp.New(gh), Server: server, Workspaces: workspace.NewManager(t.TempDir(), workspace.Options{}),
		Sandbox: sandboxtest.NewDriver(t), Model: client, Models: policy.Models{Edit: "m", Fast: "m"},
		Store: w.store, Tasks: w.store, Pulls: w.store, Locks: &memLocks{held: map[string]string{}}, Traces: w.traces, Envs: w.envs,
		Bot: workspace.Signature{Name: w.sim.App().BotLogin, Email: "bot@users.noreply.github.com"},
	}
	if w.runner, err = runner.New(w.cfg); err != nil {
		t.Fatal(err)
	}
	return w
}

// fix runs "/agent fix" by ada on issue (or pull request) number to its
// end and returns the task's record.
func (w *envWorld) fix(t testing.TB, id string, number int) runner.TaskState {
	t.Helper()
	tk := w.task(t, id, number)
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	return w.store.record(id)
}

// task is "/agent fix" by ada on issue (or pull request) number, queued.
func (w *envWorld) task(t testing.TB, id string, number int) app.Task {
	t.Helper()
	return w.taskIn(t, w.inst, repo, "ada", id, number)
}

// taskIn is "/agent fix" by requester on issue number of repo, served by
// installation inst, queued.
func (w *envWorld) taskIn(t testing.TB, inst int64, repo, requester, id string, number int) app.Task {
	t.Helper()
	return w.commandIn(t, inst, repo, requester, id, number, app.VerbFix)
}

// commandIn is "/agent VERB" by requester on issue number of repo, served
// by installation inst, queued.
func (w *envWorld) commandIn(t testing.TB, inst int64, repo, requester, id string, number int, verb app.Verb) app.Task {
	t.Helper()
	comment, err := w.sim.AddComment(repo, number, requester, "/agent "+string(verb))
	if err != nil {
		t.Fatal(err)
	}
	tk := app.Task{ID: id, Delivery: "d-" + id, Event: "issue_comment", InstallationID: inst, Repo: repo,
		Number: number, Verb: verb, Requester: requester, CommentID: comment, ReceivedAt: time.Now().UTC()}
	w.store.add(tk)
	return tk
}

// fixIssue runs a fix by ada on a new issue, which must succeed, and
// returns the setup phase's detail in its trace.
func (w *envWorld) fixIssue(t testing.TB, id string) string {
	t.Helper()
	return w.fixIssueIn(t, w.inst, repo, "ada", id)
}

// fixIssueIn runs a fix by requester on a new issue of repo, served by
// installation inst, which must succeed, and returns the setup phase's
// detail in its trace.
func (w *envWorld) fixIssueIn(t testing.TB, inst int64, repo, requester, id string) string {
	t.Helper()
	issue, err := w.sim.AddIssue(repo, "grace", "Sum drops the first sample "+id, "Sum([1 2 3]) is 5.")
	if err != nil {
		t.Fatal(err)
	}
	tk := w.taskIn(t, inst, repo, requester, id, issue)
	if err := w.runner.ProcessTask(t.Context(), tk); err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	if rec := w.store.record(id); rec.State != app.StateSucceeded {
		t.Fatalf("task %s ended %s (%s); trace %+v", id, rec.State, rec.Step, w.traces.events[id])
	}
	return w.traces.setupDetail(id)
}

// TestPreparedEnvironmentReachesTheAgent: a Go repository with two
// third-party modules, which setup downloads from a module proxy; the
// agent phase, with no network, fixes the failing test and the checks
// pass. The next task with the same go.sum reuses the environment without
// a request; a changed go.sum builds a new one.
func TestPreparedEnvironmentReachesTheAgent(t *testing.T) {
	t.Parallel()
	// The demo fix, once per task, without its first run of the checks:
	// finish runs them over the prepared environment, and the
	// verification again, which is all this test is about; each run is
	// a Go build in a cold container.
	demo := demoScript(t)
	script := demo
	script.Steps = nil
	for range 3 {
		for _, s := range demo.Steps {
			if len(s.ToolCalls) == 1 && s.ToolCalls[0].Name == "run_checks" {
				continue
			}
			script.Steps = append(script.Steps, s)
		}
	}
	if len(script.Steps) != 3*(len(demo.Steps)-1) {
		t.Fatalf("the demo script has no step that only runs the checks: %+v", demo.Steps)
	}
	w := newEnvWorld(t, script)

	first := w.fixIssue(t, "T1")
	key, ok := strings.CutPrefix(first, "setup: built ")
	if !ok {
		t.Fatalf("first task's setup: %q, want it built", first)
	}
	fetched := w.proxy.Requests.Load()
	if fetched == 0 {
		t.Fatal("setup made no request to the module proxy")
	}

	if second := w.fixIssue(t, "T2"); second != "setup: cached "+key {
		t.Errorf("second task's setup: %q, want %q", second, "setup: cached "+key)
	}
	if n := w.proxy.Requests.Load(); n != fetched {
		t.Errorf("the second task made %d module proxy requests, want none", n-fetched)
	}

	if _, err := w.sim.Commit(repo, "main", "grace", "Record a checksum", map[string]string{
		"go.sum": w.files["go.sum"] + "example.com/unused v1.0.0/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	}); err != nil {
		t.Fatal(err)
	}
	third := w.fixIssue(t, "T3")
	if !strings.HasPrefix(third, "setup: built ") || third == first {
		t.Errorf("after go.sum changed, setup: %q, want a new environment (not %s)", third, key)
	}
	if w.proxy.Requests.Load() == fetched {
		t.Error("the new environment was built without the module proxy")
	}
	list, err := w.envs.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("environments %+v, %v; want 2", list, err)
	}
}

// TestPullRequestSetupHasNoNetworkAndKeepsNothing: a pull request's head
// changes go.sum, so no environment matches; its setup runs without
// network, so the download fails, and nothing is kept for later tasks.
func TestPullRequestSetupHasNoNetworkAndKeepsNothing(t *testing.T) {
	t.Parallel()
	t.Run("cached", func(t *testing.T) {
		t.Parallel()
		testPullRequestSetup(t, newEnvWorld(t, llmtest.Script{}))
	})
	// A worker that keeps no environments runs setup over the tree alone,
	// and a pull request's without network all the same.
	t.Run("uncached", func(t *testing.T) {
		t.Parallel()
		w := newEnvWorld(t, llmtest.Script{})
		cfg := w.cfg
		cfg.Envs = nil
		var err error
		if w.runner, err = runner.New(cfg); err != nil {
			t.Fatal(err)
		}
		testPullRequestSetup(t, w)
	})
}

// testPullRequestSetup fixes a pull request whose head changed go.sum in
// w: its setup, "go mod download", has no network and fails.
func testPullRequestSetup(t *testing.T, w *envWorld) {
	main, err := w.sim.BranchSHA(repo, "main")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sim.CreateBranch(repo, "agent/9-deps", main); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.Commit(repo, "agent/9-deps", "agentbot[bot]", "Change a checksum", map[string]string{
		"go.sum": w.files["go.sum"] + "example.com/unused v1.0.0/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
	}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: w.sim.App().BotLogin, Title: "Deps", Head: "agent/9-deps"})
	if err != nil {
		t.Fatal(err)
	}
	rec := w.fix(t, "P1", pr)
	if rec.State != app.StateFailed || !strings.Contains(rec.Step, "go mod download") {
		t.Fatalf("task ended %s (%s); want failed in setup", rec.State, rec.Step)
	}
	if n := w.proxy.Requests.Load(); n != 0 {
		t.Errorf("the pull request's setup reached the module proxy %d times", n)
	}
	if list, err := w.envs.List(); err != nil || len(list) != 0 {
		t.Errorf("environments kept: %+v, %v", list, err)
	}
}

// ownerPolicy is the policy of both repositories of
// TestAnotherRepositoryCannotServeItsEnvironment but for its checks: the
// same setup line, which runs what the tree's go:generate lines say.
const ownerPolicy = `version: 1
checks:
  - {name: test, run: "%s"}
setup: {run: ["go generate ./..."]}
paths: {allow: ["**/*.go"]}
`

// A hostile repository B on the same worker copies A's setup line and lock
// files, and its setup plants a GOFLAGS=-run=NONE in $HOME's go env (every
// test of A would then pass without running) and a top-level internal/
// over A's own. A's tasks never see B's environment: their key is A's own,
// and an entry planted under A's key (forged, or colliding) is refused.
func TestAnotherRepositoryCannotServeItsEnvironment(t *testing.T) {
	t.Parallel()
	demo := demoScript(t)
	var script llmtest.Script
	for range 3 { // B's task, then A's two
		for _, s := range demo.Steps {
			if len(s.ToolCalls) == 1 && s.ToolCalls[0].Name == "run_checks" {
				continue
			}
			script.Steps = append(script.Steps, s)
		}
	}
	files := demoFiles(t)
	files["internal/stats/stats.go"] = "package stats\n\n// Real is the repository's own.\nconst Real = true\n"
	files[policy.PolicyPath] = strings.Replace(ownerPolicy, "%s", "go test ./...", 1)
	envDir := t.TempDir()
	w := newEnvWorldIn(t, script, files, sandboxtest.Image(t), envDir)

	// B: another installation's repository, with A's go.mod and policy's
	// setup line, whose go:generate plants what it wants A to run with.
	const evil = "mallory/stats"
	mallory := w.sim.AddInstallation("mallory")
	evilFiles := demoFiles(t)
	evilFiles["plant.go"] = "package stats\n\n//go:generate sh plant.sh\n"
	evilFiles["plant.sh"] = `mkdir -p "$HOME/.config/go" && printf 'GOFLAGS=-run=NONE\n' >"$HOME/.config/go/env"
mkdir -p internal/stats && printf 'package stats\n\nconst Planted = true\n' >internal/stats/stats.go
`
	evilFiles[policy.PolicyPath] = strings.Replace(ownerPolicy, "%s", "true", 1)
	if err := w.sim.AddRepo(mallory, evil, evilFiles); err != nil {
		t.Fatal(err)
	}
	w.sim.SetPermission(evil, "mallory", "write")
	planted := w.fixIssueIn(t, mallory, evil, "mallory", "B1")
	evilKey, ok := strings.CutPrefix(planted, "setup: built ")
	if !ok {
		t.Fatalf("B's setup: %q, want it built", planted)
	}
	if _, err := os.Stat(filepath.Join(envDir, "entries", evilKey, "home", ".config", "go", "env")); err != nil {
		t.Fatalf("B's setup planted nothing: %v", err)
	}

	first := w.fixIssue(t, "A1")
	key, ok := strings.CutPrefix(first, "setup: built ")
	if !ok || key == evilKey {
		t.Fatalf("A's setup: %q; want its own environment, not B's %s", first, evilKey)
	}
	ours := filepath.Join(envDir, "entries", key)
	if _, err := os.Stat(filepath.Join(ours, "home", ".config", "go", "env")); err == nil {
		t.Error("A's environment holds B's go env")
	}
	if _, err := os.Stat(filepath.Join(ours, "tree", "internal")); err == nil {
		t.Error("A's environment keeps an internal/ of its own")
	}

	// B's environment, copied under A's key, as a forged meta.json or a
	// colliding key would leave it: refused, and A builds again.
	if err := os.RemoveAll(ours); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", filepath.Join(envDir, "entries", evilKey), ours).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	meta, err := os.ReadFile(filepath.Join(ours, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ours, "meta.json"), []byte(strings.Replace(string(meta), evilKey, key, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if again := w.fixIssue(t, "A2"); again != first {
		t.Errorf("A's setup over B's entry under its key: %q, want %q", again, first)
	}
}

// A setup that writes past the server's setup.max_env_bytes is stopped
// while it writes, the task ends saying why, and nothing is kept for the
// next task. The image's seed of $HOME (174 MiB for the Go image) is part
// of every environment, so the cap leaves room for it.
func TestSetupPastTheEnvironmentCapIsNotKept(t *testing.T) {
	t.Parallel()
	files := demoFiles(t)
	// 24 files of 32 MiB, each under RLIMIT_FSIZE: 768 MiB in all, paced
	// so that the watch, which measures $HOME's seed first, sees the
	// writes rather than their end on a fast disk.
	files[policy.PolicyPath] = `version: 1
checks:
  - {name: test, run: "go test ./..."}
setup: {run: ['i=0; while [ $i -lt 24 ]; do dd if=/dev/zero of="$HOME/fill$i.bin" bs=1M count=32 2>/dev/null || exit 3; i=$((i+1)); sleep 0.2; done; echo wrote all']}
paths: {allow: ["**/*.go"]}
`
	envDir := t.TempDir()
	w := newEnvWorldIn(t, llmtest.Script{}, files, sandboxtest.Image(t), envDir)
	cfg := w.cfg
	cfg.Server.SetupMaxEnvBytes = 320 << 20
	var err error
	if w.runner, err = runner.New(cfg); err != nil {
		t.Fatal(err)
	}
	issue, err := w.sim.AddIssue(repo, "grace", "Sum drops the first sample", "Sum([1 2 3]) is 5.")
	if err != nil {
		t.Fatal(err)
	}
	rec := w.fix(t, "S1", issue)
	if rec.State != app.StateFailed || !strings.Contains(rec.Step, "setup") {
		t.Fatalf("task ended %s (%s); want failed in setup", rec.State, rec.Step)
	}
	var status string
	for _, c := range w.sim.Comments(repo, issue) {
		if strings.Contains(c.Body, "agentbot:task=S1") {
			status = c.Body
		}
	}
	if !strings.Contains(status, "exited 137") || !strings.Contains(status, "the work tree and $HOME grew to") || !strings.Contains(status, "past its limit of 320.0 MiB") {
		t.Errorf("the status comment does not say the setup was stopped at its cap:\n%s", status)
	}
	if list, err := w.envs.List(); err != nil || len(list) != 0 {
		t.Errorf("environments kept: %+v, %v", list, err)
	}
	for _, sub := range []string{"entries", "build"} {
		if left, _ := os.ReadDir(filepath.Join(envDir, sub)); len(left) != 0 {
			t.Errorf("%s/ holds %v after the refused setup", sub, left)
		}
	}
}

// With a prepared environment, $HOME is an overlay whose writes land on
// the worker's disk: a check (as any command of the agent phase) that
// writes past sandbox.disk there is killed, and the task says why.
func TestChecksWritingPastTheDiskLimitUnderHomeAreKilled(t *testing.T) {
	t.Parallel()
	files := demoFiles(t)
	// 16 files of 32 MiB, each under RLIMIT_FSIZE: 512 MiB in all.
	files[policy.PolicyPath] = `version: 1
sandbox: {disk: 64MiB}
limits: {iterations: 1}
checks:
  - {name: fill, run: 'i=0; while [ $i -lt 16 ]; do dd if=/dev/zero of="$HOME/fill$i.bin" bs=1M count=32 2>/dev/null || exit 3; i=$((i+1)); done'}
setup: {run: ["true"]}
paths: {allow: ["**/*.go"]}
`
	w := newEnvWorldOf(t, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"summary":"Nothing to change"}`}}},
	}}, files, sandboxtest.Image(t))
	issue, err := w.sim.AddIssue(repo, "grace", "Sum drops the first sample", "Sum([1 2 3]) is 5.")
	if err != nil {
		t.Fatal(err)
	}
	if rec := w.fix(t, "H1", issue); rec.State != app.StateFailed {
		t.Fatalf("task ended %s (%s); want failed", rec.State, rec.Step)
	}
	var status string
	for _, c := range w.sim.Comments(repo, issue) {
		if strings.Contains(c.Body, "agentbot:task=H1") {
			status = c.Body
		}
	}
	if !strings.Contains(status, "the work tree and $HOME grew to") || !strings.Contains(status, "past its limit of 64.0 MiB") {
		t.Errorf("the status comment does not say the check was killed at sandbox.disk:\n%s", status)
	}
}
