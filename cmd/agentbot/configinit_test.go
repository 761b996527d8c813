package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// TestConfigInitInfers: config init writes the setup, image and checks the
// tree shows, for a Go module with dependencies and a setup.py-only Python
// package, and prints the policy without writing over one with --stdout.
func TestConfigInitInfers(t *testing.T) {
	t.Parallel()
	goRepo := t.TempDir()
	writeConfigFile(t, goRepo, "go.mod", "module example.com/x\n\ngo 1.22\n\nrequire golang.org/x/text v0.3.0\n")
	writeConfigFile(t, goRepo, "go.sum", "golang.org/x/text v0.3.0 h1:a=\ngolang.org/x/text v0.3.0/go.mod h1:b=\n")
	pyRepo := t.TempDir()
	writeConfigFile(t, pyRepo, "setup.py", "from setuptools import setup\nsetup(name='s', py_modules=['s'])\n")
	for _, tt := range []struct {
		dir    string
		image  string
		setup  []string
		checks []string
	}{
		{goRepo, "agentbot-sandbox:dev", []string{"go mod download"}, []string{"go build ./...", "go test ./..."}},
		{pyRepo, "agentbot-sandbox:python", []string{"python3 -m pip install -e ."}, []string{"python3 -m pytest"}},
	} {
		out, errs, code := runConfig(t, nil, "config", "init", "--repo", tt.dir)
		if code != 0 {
			t.Fatalf("config init %s: exit status %d\n%s", tt.dir, code, errs)
		}
		path := filepath.Join(tt.dir, ".github", "agent.yml")
		if !strings.HasPrefix(out, "wrote "+path) {
			t.Errorf("config init printed %q", out)
		}
		p, err := validatePolicyFile(path, policy.ServerConfig{SetupNetwork: true})
		if err != nil {
			t.Fatalf("the policy does not validate: %v", err)
		}
		var runs []string
		for _, c := range p.Checks {
			runs = append(runs, c.Run)
		}
		if p.Sandbox.Image != tt.image || !p.Setup.Network || !slices.Equal(p.Setup.Run, tt.setup) || !slices.Equal(runs, tt.checks) {
			t.Errorf("%s: image %q, setup %q (network %v), checks %q", tt.dir, p.Sandbox.Image, p.Setup.Run, p.Setup.Network, runs)
		}
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out, _, code = runConfig(t, nil, "config", "init", "--repo", tt.dir, "--stdout")
		if code != 0 || out != string(before) {
			t.Errorf("config init --stdout over an existing file: exit status %d, printed\n%s\nwant what it wrote\n%s", code, out, before)
		}
		if _, errs, code := runConfig(t, nil, "config", "init", "--repo", tt.dir); code != 1 || !strings.Contains(errs, "never overwritten") {
			t.Errorf("config init over an existing file: exit status %d, %q", code, errs)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Errorf("the existing file changed")
		}
	}
}

// TestConfigInitServerImages: a server config whose sandbox.images does not
// hold the toolchain's image refuses the policy, and nothing is written.
func TestConfigInitServerImages(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	writeConfigFile(t, repo, "package.json", `{"name": "p", "scripts": {"test": "node --test"}}`)
	server := writeConfigFile(t, t.TempDir(), "server.yaml", "sandbox: {images: [\"registry.example.com/*\"], default_image: registry.example.com/node}\n")
	_, errs, code := runConfig(t, nil, "config", "init", "--repo", repo, "--config", server)
	if code != 1 || !strings.Contains(errs, `"agentbot-sandbox:node" is not an image this server allows`) || !strings.Contains(errs, "wrote nothing") {
		t.Errorf("config init under a server of other images: exit status %d, %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(repo, ".github")); !os.IsNotExist(err) {
		t.Errorf("config init wrote under .github: %v", err)
	}
	// The operator's own build of the toolchain's image is written instead.
	if _, errs, code := runConfig(t, nil, "config", "init", "--repo", repo, "--config", server, "--image", "registry.example.com/node:20"); code != 0 {
		t.Fatalf("config init --image: exit status %d, %q", code, errs)
	}
	p, err := validatePolicyFile(filepath.Join(repo, ".github", "agent.yml"), policy.ServerConfig{Images: []string{"registry.example.com/*"}})
	if err != nil || p.Sandbox.Image != "registry.example.com/node:20" || len(p.Checks) != 1 || p.Checks[0].Run != "npm test" {
		t.Errorf("config init --image: image %q, checks %+v, %v", p.Sandbox.Image, p.Checks, err)
	}
}

// TestConfigInitVerify runs --verify in Docker on a small Go module: a
// check that passes and one that fails run; a command the image lacks
// cannot run, which is the policy's fault, with its line.
func TestConfigInitVerify(t *testing.T) {
	t.Parallel()
	image, executor := sandboxtest.Image(t), sandboxtest.Executor(t)
	repo := t.TempDir()
	writeConfigFile(t, repo, "go.mod", "module example.com/sum\n\ngo 1.22\n")
	writeConfigFile(t, repo, "sum.go", "package sum\n\nfunc Sum(a, b int) int { return a - b }\n")
	writeConfigFile(t, repo, "sum_test.go", "package sum\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 2) != 4 {\n\t\tt.Fatal(Sum(2, 2))\n\t}\n}\n")
	base := []string{"config", "init", "--repo", repo, "--stdout", "--verify", "--sandbox-executor", executor, "--data-dir", t.TempDir()}

	policy, report, code := runConfig(t, nil, base...)
	if code != 0 {
		t.Fatalf("config init --verify: exit status %d\n%s", code, report)
	}
	if !strings.Contains(policy, "image: "+image) {
		t.Fatalf("the policy does not name %s:\n%s", image, policy)
	}
	for _, want := range []string{"build    runs (passes)", "test     runs (fails today, exit 1) go test ./..."} {
		if !strings.Contains(report, want) {
			t.Errorf("the verification lacks %q:\n%s", want, report)
		}
	}

	policy, report, code = runConfig(t, nil, append(base, "--check", "go vet ./...", "--check", "pytest -q")...)
	if code != 1 {
		t.Fatalf("config init --verify with a command the image lacks: exit status %d\n%s", code, report)
	}
	line := lineOf(policy, `"pytest -q"`)
	for _, want := range []string{"vet      runs (passes)", "CANNOT RUN               pytest -q", "the policy's fault; change .github/agent.yml line " + strconv.Itoa(line),
		"1 of 2 checks cannot run"} {
		if line == 0 || !strings.Contains(report, want) {
			t.Errorf("the verification lacks %q:\n%s", want, report)
		}
	}
}

// TestConfigInitVerifySetupFails: a setup that cannot fetch what go.sum
// lists is named with its line, with the hosts to allow, and no check runs; a
// setup that needs network without --setup-network says what to pass.
func TestConfigInitVerifySetupFails(t *testing.T) {
	t.Parallel()
	executor := sandboxtest.Executor(t)
	repo := t.TempDir()
	writeConfigFile(t, repo, "go.mod", "module example.com/x\n\ngo 1.22\n\nrequire golang.org/x/text v0.3.0\n")
	writeConfigFile(t, repo, "go.sum", "golang.org/x/text v0.3.0 h1:a=\ngolang.org/x/text v0.3.0/go.mod h1:b=\n")
	base := []string{"config", "init", "--repo", repo, "--stdout", "--verify", "--sandbox-executor", executor, "--data-dir", t.TempDir()}
	if _, errs, code := runConfig(t, nil, base...); code != 1 || !strings.Contains(errs, "pass --setup-network") {
		t.Errorf("--verify of a setup with network, without --setup-network: exit status %d, %q", code, errs)
	}
	policy, report, code := runConfig(t, nil, append(base, "--setup-network")...)
	want := "setup FAILS: change the policy's setup (.github/agent.yml line " + strconv.Itoa(lineOf(policy, "setup:")) + ")"
	if code != 1 || !strings.Contains(report, want) || !strings.Contains(report, "go mod download") || strings.Contains(report, "runs (") {
		t.Errorf("--verify of a setup that fails: exit status %d, want %q in:\n%s", code, want, report)
	}
}
