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
// then checkout), a plain "git clone" for reference, a warm checkout of a
// branch (fetch, then checkout) and a warm checkout of a commit the mirror
// has (no fetch). The goal is a warm checkout under 10% of the cold one.
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
	wall, cpu := map[string]time.Duration{}, map[string]time.Duration{}

	checkout := func(b *testing.B, m *workspace.Manager, ref string) {
		w, err := m.Checkout(b.Context(), workspace.CheckoutOptions{Repo: "octo/big", Remote: remote, Base: ref})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		w.Close()
		b.StartTimer()
	}
	run := func(name string, f func(b *testing.B)) {
		b.Run(name, func(b *testing.B) {
			before := childCPU(b)
			f(b)
			// git's CPU time (client and http-backend) is a figure the
			// machine's load does not inflate the way wall time is.
			// Setup outside the timer is only TempDir and RemoveAll.
			cpu[name] = (childCPU(b) - before) / time.Duration(b.N)
			wall[name] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(cpu[name].Milliseconds()), "cpu-ms/op")
		})
	}

	run("cold", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			dir := b.TempDir()
			m := workspace.NewManager(dir, workspace.Options{})
			b.StartTimer()
			checkout(b, m, base)
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
	run("git-clone", func(b *testing.B) {
		for range b.N {
			b.StopTimer()
			dir := b.TempDir()
			cmd := exec.Command("git", "clone", "--quiet", remote.URL, filepath.Join(dir, "c"))
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader",
				"GIT_CONFIG_VALUE_0=Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token)))
			b.StartTimer()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
			b.StopTimer()
			os.RemoveAll(dir)
			b.StartTimer()
		}
	})
	m := workspace.NewManager(b.TempDir(), workspace.Options{})
	checkout(b, m, base) // fills the mirror
	run("warm-fetch", func(b *testing.B) {
		for range b.N {
			checkout(b, m, "main")
		}
	})
	run("warm", func(b *testing.B) {
		for range b.N {
			checkout(b, m, base)
		}
	})
	pct := func(m map[string]time.Duration, name string) float64 {
		return 100 * float64(m[name]) / float64(m["cold"])
	}
	for name, m := range map[string]map[string]time.Duration{"wall": wall, "cpu": cpu} {
		fmt.Printf("5,000 files, %s: cold %v, git clone %v, warm with fetch %v (%.1f%% of cold), warm %v (%.1f%% of cold)\n",
			name, m["cold"].Round(time.Millisecond), m["git-clone"].Round(time.Millisecond),
			m["warm-fetch"].Round(time.Millisecond), pct(m, "warm-fetch"), m["warm"].Round(time.Millisecond), pct(m, "warm"))
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
