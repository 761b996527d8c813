package envcache_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/envcache/registrytest"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// prepareAndRun builds an environment with setup on image, with network,
// then runs check in a network-less container over it and a fresh tree
// holding files, and returns the check's result.
func prepareAndRun(t *testing.T, image string, files map[string]string, setup, check string) sandbox.Result {
	t.Helper()
	d := sandboxtest.NewDriver(t)
	tree := func() string {
		dir := sandboxtest.WorkTree(t)
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(dir, name), sandbox.UID, sandbox.GID)
		}
		return dir
	}
	ov := prepare(t, d, image, "00000000000000d0", tree(), true, setup)
	agent := sandboxtest.Start(t, d, docker.Spec{Image: image, WorkTree: tree(), Overlays: ov})
	return sandboxtest.MustRun(t, agent, sandbox.Cmd{Shell: check, Timeout: 2 * time.Minute})
}

// TestPythonImageWithADependency: setup installs a package from a PyPI
// "simple" index into a virtualenv in the tree; pytest passes with no
// network, the virtualenv coming from the environment.
func TestPythonImageWithADependency(t *testing.T) {
	t.Parallel()
	image := sandboxtest.ToolchainImage(t, "python")
	index := registrytest.PyPI(t, "mathy", "def add(a, b):\n    return a + b\n")
	res := prepareAndRun(t, image, map[string]string{
		"requirements.txt": "mathy==1.0\n",
		"test_add.py":      "import mathy\n\ndef test_add():\n    assert mathy.add(2, 3) == 5\n",
	}, registrytest.PipInstall(index), ".venv/bin/python -m pytest -q -p no:cacheprovider")
	if res.ExitCode != 0 {
		t.Fatalf("pytest: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if index.Requests.Load() == 0 {
		t.Fatal("setup never asked the index")
	}
}

// TestNodeImageWithADependency: setup installs a package from an npm
// registry into node_modules; npm test passes with no network.
func TestNodeImageWithADependency(t *testing.T) {
	t.Parallel()
	image := sandboxtest.ToolchainImage(t, "node")
	npm := registrytest.NPM(t, "padx", "module.exports = (s, n) => s.padStart(n, '*');\n")
	res := prepareAndRun(t, image, map[string]string{
		"package.json": `{"name":"app","version":"1.0.0","scripts":{"test":"node test.js"},"dependencies":{"padx":"1.0.0"}}`,
		"test.js":      "const pad = require('padx');\nif (pad('7', 3) !== '**7') { console.error('bad pad'); process.exit(1); }\nconsole.log('ok');\n",
	}, registrytest.NPMInstall(npm.Registry), "npm test")
	if res.ExitCode != 0 {
		t.Fatalf("npm test: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if npm.Requests.Load() == 0 {
		t.Fatal("setup never asked the registry")
	}
}
