package runner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
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
	files[policy.PolicyPath] = "version: 1\nchecks:\n  - {name: test, run: \"go test ./...\"}\n" + setup + "paths: {allow: [\"**/*.go\"]}\n"
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

// benchKinds are the repositories BenchmarkPreparedEnvironment measures,
// each made with its dependencies and the setup that fetches them, or
// (deps false) as the same code without dependencies and without setup.
var benchKinds = []struct {
	name  string
	world func(b *testing.B, script llmtest.Script, deps bool) *envWorld
}{
	{"go", func(b *testing.B, script llmtest.Script, deps bool) *envWorld {
		var proxy *goProxy
		var hosts []string
		if deps {
			proxy = newGoProxy(b)
			hosts = append(hosts, proxy.Host())
		}
		return newEnvWorldOf(b, script, benchRepo(b, proxy), sandboxtest.Image(b), hosts...)
	}},
	{"python", func(b *testing.B, script llmtest.Script, deps bool) *envWorld {
		if deps {
			w, _ := firstContactWorld(b, script, pythonFirstContact(b))
			return w
		}
		return newEnvWorldOf(b, script, map[string]string{
			"calc.py":         "def total(xs):\n    out = 0\n    for x in xs[1:]:\n        out = out + x\n    return out\n",
			"test_calc.py":    "from calc import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n",
			policy.PolicyPath: "version: 1\nchecks:\n  - {name: test, run: python3 -m pytest}\n",
		}, sandboxtest.ToolchainImage(b, "python"))
	}},
	{"node", func(b *testing.B, script llmtest.Script, deps bool) *envWorld {
		if deps {
			w, _ := firstContactWorld(b, script, nodeFirstContact(b))
			return w
		}
		return newEnvWorldOf(b, script, map[string]string{
			"package.json":    `{"name":"calc","version":"1.0.0","scripts":{"test":"node test.js"}}` + "\n",
			"index.js":        "exports.total = (xs) => xs.slice(1).reduce((a, b) => a + b, 0);\n",
			"test.js":         "const assert = require('assert');\nconst calc = require('./index');\n\nassert.strictEqual(calc.total([1, 2, 3]), 6);\nconsole.log('ok');\n",
			policy.PolicyPath: "version: 1\nchecks:\n  - {name: test, run: npm test}\n",
		}, sandboxtest.ToolchainImage(b, "node"))
	}},
}

// BenchmarkPreparedEnvironment measures, from the task's start to its
// first check result, a task on a repository of each kind: a Go module of
// about 2,000 files with 20 module dependencies, a Python package with a
// dependency from a PyPI index and a Node package with one from an npm
// registry, the two under the policy config init infers. Its environment
// is built by the task (cold) or by an earlier task of the same worker
// (warm); nodeps is the same code without dependencies and without setup,
// whose environment holds only the image's seed of $HOME, on a new worker
// (nodeps-cold) or after a first task (nodeps-warm). The aim: warm within
// 1.2× of nodeps-warm, the same worker's state without the dependencies.
// Each iteration measures the four in turn, each with a repository and a
// worker of its own made off the clock, so that a shared machine's load
// weighs on them alike; it reports each in ms and warm/nodeps-warm.
//
//	go test ./runner -run '^$' -bench BenchmarkPreparedEnvironment -benchtime 3x
func BenchmarkPreparedEnvironment(b *testing.B) {
	sandboxtest.RequireDocker(b)
	// The model asks for the checks at once: each task stops at their
	// result, and a step to spare covers a request made as it stops.
	var script llmtest.Script
	for range 4 {
		script.Steps = append(script.Steps, llmtest.Step{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: "{}"}}})
	}
	variants := []struct {
		name       string
		deps, warm bool
	}{{"cold", true, false}, {"warm", true, true}, {"nodeps-cold", false, false}, {"nodeps-warm", false, true}}
	for _, kind := range benchKinds {
		b.Run(kind.name, func(b *testing.B) {
			total := make([]time.Duration, len(variants))
			b.StopTimer()
			for i := range b.N {
				for v, bc := range variants {
					w := kind.world(b, script, bc.deps)
					if bc.warm {
						w.untilFirstCheck(b, fmt.Sprintf("W%d", i))
					}
					b.StartTimer()
					took, detail := w.untilFirstCheck(b, fmt.Sprintf("B%d", i))
					b.StopTimer()
					if bc.warm != strings.HasPrefix(detail, "setup: cached ") {
						b.Fatalf("%s task's setup: %q", bc.name, detail)
					}
					total[v] += took
				}
			}
			for v, bc := range variants {
				b.ReportMetric(float64(total[v].Milliseconds())/float64(b.N), "ms-"+bc.name+"/op")
			}
			b.ReportMetric(float64(total[1])/float64(total[3]), "warm/nodeps-warm")
		})
	}
}
