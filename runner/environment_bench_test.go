package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// Shape of the benchmark's repository: benchPackages packages of
// benchFiles files each, about 2,000 files with the demo's, and one module
// dependency per package.
const (
	benchPackages = 20
	benchFiles    = 99
)

// benchRepo is a Go repository of about 2,000 files: the demo package with
// its failing test, and benchPackages packages that each use a module of
// their own from proxy, or none and no setup when proxy is nil.
func benchRepo(b *testing.B, proxy *goProxy) map[string]string {
	b.Helper()
	files := demoFiles(b)
	for p := range benchPackages {
		pkg := fmt.Sprintf("pkg%02d", p)
		dep := fmt.Sprintf("example.com/dep%02d", p)
		if proxy != nil {
			proxy.add(b, dep, "v1.0.0", map[string]string{"dep.go": fmt.Sprintf("package dep%02d\n\n// Scale multiplies x.\nfunc Scale(x int) int { return x * %d }\n", p, p+2)})
		}
		for f := range benchFiles {
			body := fmt.Sprintf("// F%02d is one of the package's functions.\nfunc F%02d(x int) int { return x + %d }\n", f, f, f)
			if f == 0 && proxy != nil {
				body = fmt.Sprintf("import %q\n\n// F00 scales x with the dependency.\nfunc F00(x int) int { return dep%02d.Scale(x) }\n", dep, p)
			}
			files[fmt.Sprintf("%s/f%02d.go", pkg, f)] = "package " + pkg + "\n\n" + body
		}
	}
	setup := ""
	if proxy != nil {
		files["go.mod"], files["go.sum"] = proxy.tidy(b, files)
		if strings.Count(files["go.sum"], "/go.mod h1:") != benchPackages {
			b.Fatalf("go.sum does not hold the %d modules:\n%s", benchPackages, files["go.sum"])
		}
		setup = fmt.Sprintf("setup: {network: true, run: [\"GOPROXY=%s GOSUMDB=off go mod download\"]}\n", proxy.URL)
	}
	files[app.PolicyPath] = "version: 1\nchecks:\n  - {name: test, run: \"go test ./...\"}\n" + setup + "paths: {allow: [\"**/*.go\"]}\n"
	return files
}

// untilFirstCheck runs "/agent fix" on a new issue until its first check
// result, then stops the task, and returns the time from the task's start
// to that result and the setup phase's detail in the trace.
func (w *envWorld) untilFirstCheck(b *testing.B, id string) (time.Duration, string) {
	b.Helper()
	issue, err := w.sim.AddIssue(repo, "grace", "Sum drops the first sample "+id, "Sum([1 2 3]) is 5.")
	if err != nil {
		b.Fatal(err)
	}
	tk := w.task(b, id, issue)
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	// seen runs under the traces' lock, which guards at.
	var at time.Time
	w.traces.seen = func(tid string, e app.TraceEvent) {
		if tid == id && e.Kind == app.TraceCheck && at.IsZero() {
			at = time.Now()
			cancel()
		}
	}
	defer func() { w.traces.seen = nil }()
	start := time.Now()
	// The task ends stopped: only its start matters here.
	_ = w.runner.ProcessTask(ctx, tk)
	w.traces.mu.Lock()
	took := at.Sub(start)
	w.traces.mu.Unlock()
	if took < 0 {
		b.Fatalf("task %s ran no check; trace %+v", id, w.traces.events[id])
	}
	return took, w.traces.setupDetail(id)
}

// BenchmarkPreparedEnvironment measures, from the task's start to its
// first check result, a task on a Go repository of about 2,000 files with
// 20 module dependencies whose environment is built by the task (cold) or
// by an earlier task (warm), and on the same repository without
// dependencies and without setup (nodeps). The aim: warm within 1.2× of
// nodeps. Each iteration serves a repository and a worker of its own, off
// the clock; run it with -benchtime=1x.
func BenchmarkPreparedEnvironment(b *testing.B) {
	sandboxtest.RequireDocker(b)
	image := sandboxtest.Image(b)
	// The model asks for the checks at once: each task stops at their
	// result, and a step to spare covers a request made as it stops.
	var script llmtest.Script
	for range 4 {
		script.Steps = append(script.Steps, llmtest.Step{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: "{}"}}})
	}
	for _, bc := range []struct {
		name       string
		deps, warm bool
	}{{"cold", true, false}, {"warm", true, true}, {"nodeps", false, false}} {
		b.Run(bc.name, func(b *testing.B) {
			var total time.Duration
			for i := range b.N {
				b.StopTimer()
				var proxy *goProxy
				var hosts []string
				if bc.deps {
					proxy = newGoProxy(b)
					hosts = append(hosts, proxy.Host())
				}
				w := newEnvWorldOf(b, script, benchRepo(b, proxy), image, hosts...)
				if bc.warm {
					w.untilFirstCheck(b, fmt.Sprintf("W%d", i))
				}
				b.StartTimer()
				took, detail := w.untilFirstCheck(b, fmt.Sprintf("B%d", i))
				b.StopTimer()
				if bc.warm != strings.HasPrefix(detail, "setup: cached ") {
					b.Fatalf("%s task's setup: %q", bc.name, detail)
				}
				total += took
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-first-check/op")
		})
	}
}
