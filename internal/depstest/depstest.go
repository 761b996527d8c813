// Package depstest lists what a package links, for the tests that hold
// the layout's dependency arrows: a package that must not link the Docker
// SDK, a GitHub client or a simulator says so in a test that fails, with
// the importer named, the day it does.
package depstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// Module is this repository's module path.
const Module = "github.com/agentbot/agentbot"

// What the layout keeps out of a package, by import path prefix.
var (
	// DockerSDK is the Docker engine's client, behind the sandbox seam.
	DockerSDK = []string{"github.com/docker/docker", "github.com/moby/moby"}
	// GitHubClient is GitHub's API: the App's clients and the packages
	// that create them.
	GitHubClient = []string{"github.com/google/go-github", "github.com/bradleyfalzon/ghinstallation", Module + "/app/github"}
	// Simulators are the outside world's stand-ins (GitHub's, and the
	// scripted model's) and the demo built on them.
	Simulators = []string{Module + "/sim", Module + "/runner/llm/llmtest", Module + "/demo"}
)

// Package is one package pkg links.
type Package struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct{ Path, Version string }
}

// List returns the packages pkg links, itself included, as "go list -deps"
// orders them.
func List(t testing.TB, pkg string) []Package {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Imports,Module", pkg)
	out, err := cmd.Output()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
	} else if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		pkgs = append(pkgs, p)
	}
}

// Forbid fails t for every package pkg links whose import path is one of
// prefixes or lies under one and that a package outside them imports: the
// error names where the arrow crosses, not every package behind it.
func Forbid(t testing.TB, pkg string, prefixes ...string) {
	t.Helper()
	pkgs := List(t, pkg)
	for _, q := range pkgs {
		if Under(q.ImportPath, prefixes...) {
			continue
		}
		for _, imp := range q.Imports {
			if Under(imp, prefixes...) {
				t.Errorf("%s links %s, imported by %s", pkg, imp, q.ImportPath)
			}
		}
	}
}

// Under tells whether path is one of prefixes or a package under one.
func Under(path string, prefixes ...string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
