package envcache_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

func run(t *testing.T, c sandbox.Box, line string) string {
	t.Helper()
	res := sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: line, Timeout: time.Minute})
	if res.ExitCode != 0 {
		t.Fatalf("%s: exit %d: %s", line, res.ExitCode, res.Stderr)
	}
	return string(res.Stdout)
}

// prepare builds the environment key on image: a setup container over
// tree runs SeedHome; the
// environment is published and held until the test ends, and its
// overlays are returned.
func prepare(t *testing.T, d *docker.Driver, image, key, tree string) []sandbox.Overlay {
	t.Helper()
	c, err := envcache.Open(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Build(envcache.Entry{Key: key, Owner: envcache.Owner{Repository: 1}}, tree, envcache.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	setup := sandboxtest.Start(t, d, sandbox.Spec{Image: image, WorkTree: tree, Home: b.Home()})
	run(t, setup, envcache.SeedHome)
	setup.Close(t.Context())
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Release() })
	ov, err := env.Overlays()
	if err != nil {
		t.Fatal(err)
	}
	return ov
}

// TestNoTaskPoisonsTheEnvironment: what a task's container writes into
// $HOME or node_modules, in place or anew, is gone for the next task.
func TestNoTaskPoisonsTheEnvironment(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c, err := envcache.Open(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := sandboxtest.WorkTree(t)
	b, err := c.Build(envcache.Entry{Key: "0123456789abcdef", Owner: envcache.Owner{Repository: 1}, Repo: "acme/web"}, tree, envcache.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	setup := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree, Home: b.Home()})
	run(t, setup, `mkdir -p "$HOME/.npm" node_modules/dep && echo cached >"$HOME/.npm/dep" && echo 'module.exports = 1' >node_modules/dep/index.js`)
	setup.Close(t.Context())
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tree, "node_modules")); err == nil {
		t.Fatal("node_modules stayed in the setup's work tree")
	}

	task := func(line string) string {
		t.Helper()
		env, err := c.Acquire("0123456789abcdef", envcache.Owner{Repository: 1})
		if err != nil || env == nil {
			t.Fatalf("acquire: %v, %v", env, err)
		}
		defer env.Release()
		ov, err := env.Overlays()
		if err != nil {
			t.Fatal(err)
		}
		box := sandboxtest.Start(t, d, sandbox.Spec{Overlays: ov})
		defer box.Close(t.Context())
		return run(t, box, line)
	}
	env.Release()
	task(`echo poisoned >"$HOME/.npm/dep" && echo poisoned >node_modules/dep/index.js && touch "$HOME/planted" node_modules/planted`)
	got := task(`cat "$HOME/.npm/dep" node_modules/dep/index.js; ls -A "$HOME" node_modules`)
	if want := "cached\nmodule.exports = 1\n/home/sandbox:\n.npm\n\nnode_modules:\ndep\n"; got != want {
		t.Fatalf("the next task sees\n%s\nwant\n%s", got, want)
	}
}

// compiles is how many packages "go build -x pkg" compiles in c.
func compiles(t *testing.T, c sandbox.Box, pkg string) string {
	t.Helper()
	return strings.TrimSpace(run(t, c, `go build -x `+pkg+` 2>&1 | grep -c '/compile ' || true`))
}

// vets is how many packages "go test -x" of a new package whose test
// imports only testing vets in c: the package itself, and those of the
// standard library whose facts the cache lacks.
func vets(t *testing.T, c sandbox.Box) string {
	t.Helper()
	return strings.TrimSpace(run(t, c, `cd "$(mktemp -d)" && printf 'module m\n' >go.mod &&
printf 'package m\n\nimport "testing"\n\nfunc TestM(*testing.T) {}\n' >m_test.go &&
go test -x . 2>&1 | grep -c '/vet ' || true`))
}

// TestGoImageSeedsABuildCache: an environment built on the Go image
// starts with the standard library compiled, and vetted as "go test" vets
// the packages a test imports.
func TestGoImageSeedsABuildCache(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	image := sandboxtest.ToolchainImage(t, "go")
	ov := prepare(t, d, image, "00000000000000c0", sandboxtest.WorkTree(t))
	seeded := sandboxtest.Start(t, d, sandbox.Spec{Image: image, Overlays: ov})
	if n := compiles(t, seeded, "testing"); n != "0" {
		t.Errorf("with the seeded environment, go build compiled %s packages of the standard library; want 0", n)
	}
	if n := vets(t, seeded); n != "1" {
		t.Errorf("with the seeded environment, go test vetted %s packages; want 1, its own", n)
	}
	// A package without imports, so that the cold container compiles one.
	if n := compiles(t, sandboxtest.Start(t, d, sandbox.Spec{Image: image}), "unicode/utf8"); n == "0" {
		t.Error("without an environment nothing was compiled either: the check proves nothing")
	}
}
