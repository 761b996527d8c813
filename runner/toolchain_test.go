package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/envcache/registrytest"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// fixScript runs the checks, edits path, replacing old with fixed, runs
// the checks again and finishes.
func fixScript(path, old, fixed string) llmtest.Script {
	edit := fmt.Sprintf(`{"path":%q,"old_string":%q,"new_string":%q}`, path, old, fixed)
	return llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: "{}"}}},
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: llmtest.Arguments(edit)}}},
		{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: "{}"}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"title":"Fix the failing test","summary":"Fix the failing test\n\nThe function now does what its test says."}`}}},
	}}
}

// installPolicy is a policy whose one check runs check, whose setup runs
// install with network and which lets the agent edit files matching allow.
func installPolicy(check, install, allow string) string {
	return fmt.Sprintf(`version: 1
checks:
  - {name: test, run: %q}
setup: {network: true, run: [%q]}
paths: {allow: [%q]}
`, check, install, allow)
}

// toolchainTask runs a fix on a new issue of w, which must open a pull
// request after setup built the environment through registry, the checks
// failing before the agent's edit and passing after it.
func toolchainTask(t *testing.T, w *envWorld, registry *registrytest.Registry) {
	t.Helper()
	detail := w.fixIssue(t, "T1")
	if !strings.HasPrefix(detail, "setup: built ") {
		t.Errorf("setup: %q, want it built", detail)
	}
	var outcomes []string
	for _, e := range w.traces.events["T1"] {
		if e.Kind == app.TraceCheck {
			outcomes = append(outcomes, e.Outcome)
		}
	}
	if len(outcomes) < 2 || outcomes[0] != "failed" || outcomes[len(outcomes)-1] != "passed" {
		t.Errorf("checks %v; want failed before the edit and passed at the end", outcomes)
	}
	if registry.Requests.Load() == 0 {
		t.Error("setup never asked the registry")
	}
	if prs := w.sim.PullRequests(repo); len(prs) != 1 {
		t.Fatalf("pull requests %+v, want one", prs)
	}
}

// TestPythonPackageWithADependency: a Python package whose test fails and
// whose code uses a package from a PyPI index; setup installs it into a
// virtualenv on the python image through the egress proxy; the agent
// phase, with no network, fixes the code, pytest passes and the pull
// request opens.
func TestPythonPackageWithADependency(t *testing.T) {
	t.Parallel()
	image := sandboxtest.ToolchainImage(t, "python")
	index := registrytest.PyPI(t, registrytest.Module(t, "mathy", "def add(a, b):\n    return a + b\n"))
	files := map[string]string{
		".gitignore":       "__pycache__/\n.venv/\n",
		"requirements.txt": "mathy==1.0\n",
		"calc.py":          "import mathy\n\n\ndef total(xs):\n    s = 0\n    for x in xs[1:]:\n        s = mathy.add(s, x)\n    return s\n",
		"test_calc.py":     "from calc import total\n\n\ndef test_total():\n    assert total([1, 2, 3]) == 6\n",
		policy.PolicyPath:  installPolicy(".venv/bin/python -m pytest -q -p no:cacheprovider", registrytest.PipInstall(index), "**/*.py"),
	}
	w := newEnvWorldOf(t, fixScript("calc.py", "for x in xs[1:]:", "for x in xs:"), files, image, index.Host())
	toolchainTask(t, w, index)
}

// TestNodePackageWithADependency: a Node package whose test fails and
// whose code uses a package from an npm registry; setup installs it into
// node_modules on the node image through the egress proxy; the agent
// phase, with no network, fixes the code, npm test passes and the pull
// request opens.
func TestNodePackageWithADependency(t *testing.T) {
	t.Parallel()
	image := sandboxtest.ToolchainImage(t, "node")
	npm := registrytest.NPM(t, "padx", "module.exports = (s, n) => s.padStart(n, '*');\n")
	files := map[string]string{
		".gitignore":        "node_modules/\n",
		"package-lock.json": npm.PackageLock("app"),
		"package.json":      `{"name":"app","version":"1.0.0","scripts":{"test":"node test.js"},"dependencies":{"padx":"1.0.0"}}`,
		"label.js":          "const pad = require('padx');\nmodule.exports = (n) => pad(String(n), 2);\n",
		"test.js":           "const label = require('./label');\nif (label(7) !== '**7') { console.error('bad label: ' + label(7)); process.exit(1); }\nconsole.log('ok');\n",
		policy.PolicyPath:   installPolicy("npm test", registrytest.NPMCI(npm.Registry), "**/*.js"),
	}
	w := newEnvWorldOf(t, fixScript("label.js", "pad(String(n), 2)", "pad(String(n), 3)"), files, image, npm.Host())
	toolchainTask(t, w, npm.Registry)
}
