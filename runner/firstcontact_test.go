package runner_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/envcache/registrytest"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// firstContact is a repository as a new user brings it: its files, with a
// bug its own test shows, the registry its dependencies come from, and
// the edit that fixes the bug.
type firstContact struct {
	files    map[string]string
	registry *registrytest.Registry
	// registries is the server config's setup.registries entry.
	registries string
	image      string
	edit       [3]string // path, old, new
}

// goFirstContact is the demo's Go module, whose Sum drops its first
// sample, with two module dependencies from the test's module proxy.
func goFirstContact(t testing.TB) firstContact {
	proxy := newGoProxy(t)
	proxy.add(t, "example.com/mathx", "v1.0.0", map[string]string{"mathx.go": "package mathx\n\nfunc Add(a, b int) int { return a + b }\n"})
	proxy.add(t, "example.com/textx", "v1.0.0", map[string]string{"textx.go": "package textx\n\nfunc Twice(s string) string { return s + s }\n"})
	files := demoFiles(t)
	files["deps.go"] = "package stats\n\nimport (\n\t\"example.com/mathx\"\n\t\"example.com/textx\"\n)\n\n" +
		"// Label names a sample twice over.\nfunc Label(s string) string { return textx.Twice(s) }\n\n" +
		"// Add adds two samples.\nfunc Add(a, b int) int { return mathx.Add(a, b) }\n"
	files["go.mod"], files["go.sum"] = proxy.tidy(t, files)
	return firstContact{files: files, registry: proxy.Registry, image: sandboxtest.Image(t),
		registries: fmt.Sprintf("go: {url: %q, sumdb: \"off\"}", proxy.URL),
		edit:       [3]string{"stats.go", "for i := 1; i < len(xs); i++ {", "for i := 0; i < len(xs); i++ {"}}
}

// nodeFirstContact is a Node package whose total drops its first sample,
// depending on a package of the test's npm registry, with its lock file.
func nodeFirstContact(t testing.TB) firstContact {
	npm := registrytest.NPM(t, "padx", "module.exports = (s, n) => String(s).padStart(n, '*');\n")
	files := map[string]string{
		"package.json":      `{"name":"calc","version":"1.0.0","scripts":{"test":"node test.js"},"dependencies":{"padx":"1.0.0"}}` + "\n",
		"package-lock.json": npm.PackageLock("calc"),
		"index.js":          "const padx = require('padx');\n\nexports.total = (xs) => xs.slice(1).reduce((a, b) => a + b, 0);\nexports.label = (n) => padx(n, 4);\n",
		"test.js":           "const assert = require('assert');\nconst calc = require('./index');\n\nassert.strictEqual(calc.label(7), '***7');\nassert.strictEqual(calc.total([1, 2, 3]), 6);\nconsole.log('ok');\n",
	}
	return firstContact{files: files, registry: npm.Registry, image: sandboxtest.ToolchainImage(t, "node"),
		registries: fmt.Sprintf("npm: {url: %q}", npm.URL+"/"),
		edit:       [3]string{"index.js", "xs.slice(1).reduce", "xs.reduce"}}
}

// pythonFirstContact is a Python package of setup.py alone whose total
// drops its first sample, depending on a package of the test's index.
func pythonFirstContact(t testing.TB) firstContact {
	return pythonPackage(t, map[string]string{
		"setup.py": "from setuptools import setup\n\nsetup(name=\"calc\", version=\"1.0\", py_modules=[\"calc\"], install_requires=[\"mathy\"])\n",
	})
}

// pyprojectFirstContact is the same package described by pyproject.toml
// alone, which pip builds in an isolated environment of the build
// backend it fetches from the index, as it does from a real one.
func pyprojectFirstContact(t testing.TB) firstContact {
	return pythonPackage(t, map[string]string{
		"pyproject.toml": "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n" +
			"[project]\nname = \"calc\"\nversion = \"1.0\"\ndependencies = [\"mathy\"]\n\n" +
			"[tool.setuptools]\npy-modules = [\"calc\"]\n",
	})
}

// pythonPackage is a Python package of the files that describe it whose
// total drops its first sample, depending on package mathy of the test's
// index, which also serves the build backend.
func pythonPackage(t testing.TB, described map[string]string) firstContact {
	image := sandboxtest.ToolchainImage(t, "python")
	index := registrytest.PyPI(t, append(buildBackend(t, image),
		registrytest.Module(t, "mathy", "def add(a, b):\n    return a + b\n"))...)
	files := map[string]string{
		"calc.py":      "import mathy\n\n\ndef total(xs):\n    out = 0\n    for x in xs[1:]:\n        out = mathy.add(out, x)\n    return out\n",
		"test_calc.py": "from calc import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n",
	}
	maps.Copy(files, described)
	return firstContact{files: files, registry: index, image: image,
		registries: fmt.Sprintf("pypi: {url: %q}", index.URL+"/simple/"),
		edit:       [3]string{"calc.py", "for x in xs[1:]:", "for x in xs:"}}
}

// buildBackend is what pip's isolated build of a setuptools package
// fetches from the index: setuptools, the wheel of it that image keeps
// for venv, and wheel, which setuptools asks for and which image has only
// installed, packed into a wheel here. Both are read from the image
// without running it: nothing comes from the internet.
func buildBackend(t testing.TB, image string) []registrytest.Dist {
	t.Helper()
	var dists []registrytest.Dist
	for path, data := range sandboxtest.ImageFiles(t, image, "/usr/share/python-wheels") {
		if name, ok := strings.CutPrefix(filepath.Base(path), "setuptools-"); ok {
			version, _, _ := strings.Cut(name, "-")
			dists = append(dists, registrytest.Dist{Name: "setuptools", Version: version, Wheel: data})
		}
	}
	const site = "/usr/lib/python3/dist-packages/"
	pkg := map[string][]byte{}
	for path, data := range sandboxtest.ImageFiles(t, image, site+"wheel") {
		if !strings.Contains(path, "__pycache__") {
			pkg[path] = data
		}
	}
	m := regexp.MustCompile(`(?m)^__version__ = "([^"]+)"`).FindSubmatch(pkg["wheel/__init__.py"])
	if len(dists) != 1 || m == nil {
		t.Fatalf("%s holds no setuptools wheel or no wheel package to serve the build backend from", image)
	}
	version := string(m[1])
	// Its entry points give setuptools the bdist_wheel command.
	egg := sandboxtest.ImageFiles(t, image, site+"wheel-"+version+".egg-info")
	info := map[string][]byte{"entry_points.txt": egg["wheel-"+version+".egg-info/entry_points.txt"]}
	return append(dists, registrytest.WheelOf(t, "wheel", version, pkg, info))
}

// firstContactWorld serves fc under the policy "agentbot config init"
// infers from it, and nothing else, on a server config that names its
// registry; it returns the world and the inference.
func firstContactWorld(t testing.TB, script llmtest.Script, fc firstContact) (*envWorld, policyinit.Proposal) {
	t.Helper()
	tree := fstest.MapFS{}
	for path, data := range fc.files {
		tree[path] = &fstest.MapFile{Data: []byte(data)}
	}
	prop, err := policyinit.Infer(tree)
	if err != nil {
		t.Fatal(err)
	}
	fc.files[policy.PolicyPath] = prop.YAML()
	w := newEnvWorldOf(t, script, fc.files, fc.image)
	w.onlyRegistries(t, fc.registries)
	return w, prop
}

// onlyRegistries remakes w's runner under a server config whose only
// setup settings are setup.allow_network and setup.registries, whose
// entry is registries.
func (w *envWorld) onlyRegistries(t testing.TB, registries string) {
	t.Helper()
	yaml := "setup:\n  allow_network: true\n  registries:\n    " + registries + "\n"
	server, err := policy.ParseServerConfig(filepath.Join(t.TempDir(), "server.yaml"), []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	w.cfg.Server.SetupAllowHosts, w.cfg.Server.SetupRegistries = server.SetupAllowHosts, server.SetupRegistries
	if w.runner, err = runner.New(w.cfg); err != nil {
		t.Fatal(err)
	}
}

// First contact: a repository with dependencies gets the policy "agentbot
// config init" infers from its tree (app/policyinit) and nothing else, on
// a server config whose only setup settings are setup.allow_network and
// setup.registries. A fix succeeds, its setup fetching the dependencies
// from the operator's registry, which go, pip and npm learn from
// setup.registries alone (the inferred commands name no index, registry
// or allowed host); the second fix reuses the prepared
// environment and asks the registry nothing.
func TestFirstContactFixesWithTheInferredPolicy(t *testing.T) {
	t.Parallel()
	for name, repoOf := range map[string]func(testing.TB) firstContact{
		"go": goFirstContact, "python-setup.py": pythonFirstContact, "python-pyproject": pyprojectFirstContact, "node": nodeFirstContact} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sandboxtest.RequireDocker(t)
			fc := repoOf(t)
			script := fixScript(fc.edit[0], fc.edit[1], fc.edit[2])
			script.Steps = append(script.Steps, script.Steps...) // two fixes
			w, prop := firstContactWorld(t, script, fc)
			if img := prop.Primary().Image; img != fc.image && name != "go" {
				t.Fatalf("config init names the image %s; the tests build %s", img, fc.image)
			}

			first := w.fixIssue(t, "T1")
			key, ok := strings.CutPrefix(first, "setup: built ")
			if !ok {
				t.Fatalf("the first fix's setup: %q, want it built", first)
			}
			// The toolchain runs the repository's tests in the sandbox:
			// failing before the agent's edit, passing after it.
			byStep := map[int][]string{}
			var steps []int
			for _, e := range w.traces.events["T1"] {
				if e.Kind == app.TraceCheck && e.Step > 0 {
					if _, seen := byStep[e.Step]; !seen {
						steps = append(steps, e.Step)
					}
					byStep[e.Step] = append(byStep[e.Step], e.Outcome)
				}
			}
			if len(steps) < 2 || !slices.Contains(byStep[steps[0]], "failed") || slices.Contains(byStep[steps[len(steps)-1]], "failed") {
				t.Errorf("the agent's checks by step %v; want a failure before the edit and none after it", byStep)
			}
			if prs := w.sim.PullRequests(repo); len(prs) != 1 {
				t.Errorf("pull requests %+v, want the fix's", prs)
			}
			fetched := fc.registry.Requests.Load()
			if fetched == 0 {
				t.Fatal("setup asked the operator's registry nothing")
			}
			if second := w.fixIssue(t, "T2"); second != "setup: cached "+key {
				t.Errorf("the second fix's setup: %q, want %q", second, "setup: cached "+key)
			}
			if n := fc.registry.Requests.Load() - fetched; n != 0 {
				t.Errorf("the second fix made %d registry requests, want none", n)
			}
		})
	}
}
