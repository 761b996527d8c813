package workspace_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/workspace"
	"github.com/agentbot/agentbot/runner/workspace/workspacetest"
)

// BenchmarkCheckout compares, on a generated repository of 5,000 files
// served over smart HTTP: a cold checkout (empty data dir: mirror clone,
// then checkout), a plain "git clone" for reference, warm checkouts without
// spare trees of a branch (fetch, then checkout) and of a commit the mirror
// has (no fetch), and the same two from the pool of spare trees, the steady
// state of a worker. The goal is a pooled checkout under 10% of the cold one.
//
// Only the checkout is timed: removing the workspace, and in the pooled
// cases waiting for the spare tree that replaces the one taken, are not.
// cpu-ms/op is the CPU time of git (client and http-backend) in the timed
// part, a figure that the machine's load inflates less than wall time.
func BenchmarkCheckout(b *testing.B) {
	srv := workspacetest.NewServer(b, token)
	base := srv.CreateRepo(b, "octo/big", func(dir string) {
		for i := range 5000 {
			p := filepath.Join(dir, fmt.Sprintf("pkg%02d/sub%d/file%04d.go", i%50, i%7, i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			body := fmt.Sprintf("package pkg\n\n// File %d.\n%s", i, strings.Repeat(fmt.Sprintf("var v%d = %d\n", i, i), 1+i%40))
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	remote := workspace.Remote{URL: srv.RepoURL("octo/big"), Token: token}
	var names []string
	wall, cpu := map[string]time.Duration{}, map[string]time.Duration{}

	// run times op, and nothing else, in each of b.N rounds of setup, op
	// and teardown.
	run := func(name string, setup func(b *testing.B), op func(b *testing.B), teardown func(b *testing.B)) {
		names = append(names, name)
		b.Run(name, func(b *testing.B) {
			b.StopTimer()
			var used time.Duration
			for range b.N {
				setup(b)
				before := childCPU(b)
				b.StartTimer()
				op(b)
				b.StopTimer()
				used += childCPU(b) - before
				teardown(b)
			}
			cpu[name] = used / time.Duration(b.N)
			wall[name] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(cpu[name].Milliseconds()), "cpu-ms/op")
		})
	}
	var w *workspace.Workspace
	checkout := func(m **workspace.Manager, ref string) func(b *testing.B) {
		return func(b *testing.B) {
			var err error
			w, err = (*m).Checkout(b.Context(), workspace.CheckoutOptions{Repo: "octo/big", Remote: remote, Base: ref})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	closeWorkspace := func(m **workspace.Manager) func(b *testing.B) {
		return func(b *testing.B) {
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			(*m).WaitSpares()
		}
	}
	nothing := func(*testing.B) {}

	var cold *workspace.Manager
	var coldDir string
	run("cold", func(b *testing.B) {
		coldDir = b.TempDir()
		cold = workspace.NewManager(coldDir, workspace.Options{})
	}, checkout(&cold, base), func(b *testing.B) {
		closeWorkspace(&cold)(b)
		os.RemoveAll(coldDir)
	})

	var cloneDir string
	var clone *exec.Cmd
	run("git-clone", func(b *testing.B) {
		cloneDir = b.TempDir()
		clone = exec.Command("git", "clone", "--quiet", remote.URL, filepath.Join(cloneDir, "c"))
		clone.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader",
			"GIT_CONFIG_VALUE_0=Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token)))
	}, func(b *testing.B) {
		if out, err := clone.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}, func(*testing.B) { os.RemoveAll(cloneDir) })

	plain := workspace.NewManager(b.TempDir(), workspace.Options{})
	checkout(&plain, base)(b) // fills the mirror
	closeWorkspace(&plain)(b)
	run("warm-fetch", nothing, checkout(&plain, "main"), closeWorkspace(&plain))
	run("warm", nothing, checkout(&plain, base), closeWorkspace(&plain))

	pooled := workspace.NewManager(b.TempDir(), workspace.Options{SpareTrees: 1})
	defer pooled.Close()
	checkout(&pooled, base)(b) // fills the mirror and the pool
	closeWorkspace(&pooled)(b)
	run("pooled-fetch", nothing, checkout(&pooled, "main"), closeWorkspace(&pooled))
	run("pooled", nothing, checkout(&pooled, base), closeWorkspace(&pooled))

	for _, figures := range []struct {
		kind string
		m    map[string]time.Duration
	}{{"wall", wall}, {"cpu", cpu}} {
		var parts []string
		for _, name := range names {
			part := fmt.Sprintf("%s %v", name, figures.m[name].Round(time.Millisecond))
			if name != "cold" {
				part += fmt.Sprintf(" (%.1f%%)", 100*float64(figures.m[name])/float64(figures.m["cold"]))
			}
			parts = append(parts, part)
		}
		fmt.Printf("5,000 files, %s, %% of cold: %s\n", figures.kind, strings.Join(parts, ", "))
	}
}

// childCPU is the user and system time of the process's finished children.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
