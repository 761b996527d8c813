package main

import (
	"flag"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/internal/depstest"
)

var update = flag.Bool("update", false, "rewrite testdata/deps.golden from what the binary links")

// goldenDeps is what the agentbot binary links, checked in: a new
// dependency, of this module or another, is a diff a reviewer sees.
const goldenDeps = "testdata/deps.golden"

func TestBinaryDependencies(t *testing.T) {
	t.Parallel()
	got := renderDeps(depstest.List(t, "."))
	if *update {
		if err := os.WriteFile(goldenDeps, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenDeps)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the binary's dependencies differ from %s; review the change and rerun with -update:\n%s",
			goldenDeps, lineDiff(string(want), got))
	}
}

// renderDeps lists the packages of this module, then the other modules
// with their versions.
func renderDeps(pkgs []depstest.Package) string {
	var own, modules []string
	for _, p := range pkgs {
		switch {
		case p.Standard:
		case depstest.Under(p.ImportPath, depstest.Module):
			own = append(own, p.ImportPath)
		case p.Module != nil:
			modules = append(modules, p.Module.Path+" "+p.Module.Version)
		}
	}
	slices.Sort(own)
	slices.Sort(modules)
	var b strings.Builder
	fmt.Fprintf(&b, "# What the agentbot binary links (go list -deps ./cmd/agentbot): the packages\n")
	fmt.Fprintf(&b, "# of this module, then every other module. TestBinaryDependencies compares;\n")
	fmt.Fprintf(&b, "# go test ./cmd/agentbot -run TestBinaryDependencies -update rewrites.\n\n")
	b.WriteString(strings.Join(own, "\n") + "\n\n")
	b.WriteString(strings.Join(slices.Compact(modules), "\n") + "\n")
	return b.String()
}

// lineDiff names the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "-%s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+%s\n", l)
		}
	}
	return b.String()
}

// The binary operators deploy carries no simulator, no scripted model, no
// demo and no test helper: those are the agentbot-demo binary's and the
// tests'. A scripted model is reached as a real one is, through
// AGENTBOT_LLM_BASE_URL (agentbot-demo model serves one).
func TestBinaryLinksNoSimulatorNorTestHelper(t *testing.T) {
	t.Parallel()
	depstest.Forbid(t, ".", slices.Concat(depstest.Simulators, []string{"testing"})...)
	for _, p := range depstest.List(t, ".") {
		if depstest.Under(p.ImportPath, depstest.Module) && strings.HasSuffix(path.Base(p.ImportPath), "test") {
			t.Errorf("the binary links the test helper %s", p.ImportPath)
		}
	}
}
