package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// ownedDir makes a directory the sandbox user may write.
func ownedDir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, sandbox.UID, sandbox.GID); err != nil {
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOverlayIsCopyOnWrite(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	tmp := t.TempDir()
	lower := ownedDir(t, filepath.Join(tmp, "lower"))
	// As the setup phase leaves it: the sandbox user's file.
	if err := os.WriteFile(filepath.Join(lower, "dep.txt"), []byte("original\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(lower, "dep.txt"), sandbox.UID, sandbox.GID)
	overlay := func(n string) sandbox.Overlay {
		return sandbox.Overlay{Target: sandbox.Home, Lower: lower,
			Upper: ownedDir(t, filepath.Join(tmp, n, "upper")), Work: ownedDir(t, filepath.Join(tmp, n, "work"))}
	}
	c := sandboxtest.Start(t, d, sandbox.Spec{Overlays: []sandbox.Overlay{overlay("a")}})
	res := shell(t, c, `cat "$HOME/dep.txt" && echo poisoned >"$HOME/dep.txt" && touch "$HOME/new" && cat "$HOME/dep.txt"`)
	if res.ExitCode != 0 || string(res.Stdout) != "original\npoisoned\n" {
		t.Fatalf("write through the overlay: exit %d, %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(lower, "dep.txt")); string(got) != "original\n" {
		t.Fatalf("the lower directory changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(lower, "new")); err == nil {
		t.Fatal("a file the container created reached the lower directory")
	}
	// A second container over the same lower sees none of it.
	c2 := sandboxtest.Start(t, d, sandbox.Spec{Overlays: []sandbox.Overlay{overlay("b")}})
	res = shell(t, c2, `cat "$HOME/dep.txt"; ls "$HOME"`)
	if string(res.Stdout) != "original\ndep.txt\n" {
		t.Fatalf("second container sees %q", res.Stdout)
	}
}

func TestHomeIsKept(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	home := ownedDir(t, filepath.Join(t.TempDir(), "home"))
	c := sandboxtest.Start(t, d, sandbox.Spec{Home: home})
	if res := shell(t, c, `mkdir -p "$HOME/.cache" && echo kept >"$HOME/.cache/x"`); res.ExitCode != 0 {
		t.Fatalf("write home: %q", res.Stderr)
	}
	if got, err := os.ReadFile(filepath.Join(home, ".cache", "x")); err != nil || string(got) != "kept\n" {
		t.Fatalf("home on the host: %q, %v", got, err)
	}
}

func TestOverlayRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	dir := t.TempDir()
	for name, o := range map[string]sandbox.Overlay{
		"relative target": {Target: "home", Lower: dir, Upper: dir, Work: dir},
		"missing lower":   {Target: "/x", Lower: filepath.Join(dir, "none"), Upper: dir, Work: dir},
		"comma":           {Target: "/x", Lower: ownedDir(t, filepath.Join(dir, "a,b")), Upper: dir, Work: dir},
	} {
		_, err := d.Start(t.Context(), sandbox.Spec{TaskID: "bad", WorkTree: sandboxtest.WorkTree(t), Overlays: []sandbox.Overlay{o}})
		if err == nil || !strings.Contains(err.Error(), "overlay") {
			t.Errorf("%s: got %v, want an overlay error", name, err)
		}
	}
}

// What a command writes into $HOME reaches the worker's disk as much as
// what it writes into the tree: through an overlay's upper directory (the
// agent phase and the checks over a prepared environment) or through a
// setup's $HOME. Both count with the tree against Spec.MaxTreeGrowth.
func TestHomeWritesCountAgainstTheDiskLimit(t *testing.T) {
	t.Parallel()
	const growth = 64 << 20
	// What a command may write between two measurements and while the
	// kill lands, as in TestManyFilesStoppedByTreeLimit.
	const slack = 192 << 20
	d := sandboxtest.NewDriver(t)
	// 16 files of 32 MiB, each under RLIMIT_FSIZE: 512 MiB in all.
	const fill = `i=0; while [ $i -lt 16 ]; do dd if=/dev/zero of="$HOME/fill$i.bin" bs=1M count=32 2>/dev/null || exit 3; i=$((i+1)); done; echo wrote all`
	tmp := t.TempDir()
	lower := ownedDir(t, filepath.Join(tmp, "lower"))
	// The environment's own bytes are not the task's: a big lower costs
	// nothing, however it is rewritten.
	if err := os.WriteFile(filepath.Join(lower, "dep.bin"), make([]byte, 48<<20), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(lower, "dep.bin"), sandbox.UID, sandbox.GID)
	os.Chmod(filepath.Join(lower, "dep.bin"), 0o666)
	modulesLower := ownedDir(t, filepath.Join(tmp, "modules"))
	// Each container has upper directories of its own, named run.
	overlays := func(run string) (home, modules sandbox.Overlay) {
		home = sandbox.Overlay{Target: sandbox.Home, Lower: lower,
			Upper: ownedDir(t, filepath.Join(tmp, run, "home", "upper")), Work: ownedDir(t, filepath.Join(tmp, run, "home", "work"))}
		modules = sandbox.Overlay{Target: sandbox.WorkDir + "/node_modules", Lower: modulesLower,
			Upper: ownedDir(t, filepath.Join(tmp, run, "nm", "upper")), Work: ownedDir(t, filepath.Join(tmp, run, "nm", "work"))}
		return home, modules
	}
	home, modules := overlays("a")
	home2, modules2 := overlays("b")
	home3, _ := overlays("c")
	setupHome := ownedDir(t, filepath.Join(tmp, "setup-home"))
	for _, tc := range []struct {
		name  string
		spec  sandbox.Spec
		line  string
		where string // the host directory the writes land in
	}{
		{"overlay", sandbox.Spec{Overlays: []sandbox.Overlay{home, modules}}, fill, home.Upper},
		{"overlay in the tree", sandbox.Spec{Overlays: []sandbox.Overlay{home2, modules2}},
			strings.ReplaceAll(fill, `"$HOME/`, `"/workspace/node_modules/`), modules2.Upper},
		{"setup home", sandbox.Spec{Home: setupHome}, fill, setupHome},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.MaxTreeGrowth = growth
			c := sandboxtest.Start(t, d, tc.spec)
			// Under the limit: unaffected.
			if res := shell(t, c, `dd if=/dev/zero of="$HOME/small.bin" bs=1M count=16 2>/dev/null && echo ok`); res.ExitCode != 0 || res.TreeFull || string(res.Stdout) != "ok\n" {
				t.Fatalf("a command under the limit: exit %d, tree full %v, stdout %q, stderr %q", res.ExitCode, res.TreeFull, res.Stdout, res.Stderr)
			}
			res := shell(t, c, tc.line)
			if !res.TreeFull || res.ExitCode == 0 || strings.Contains(string(res.Stdout), "wrote all") {
				t.Errorf("filling $HOME: exit %d, tree full %v, stdout %q, stderr %q", res.ExitCode, res.TreeFull, res.Stdout, res.Stderr)
			}
			if !strings.Contains(string(res.Stderr), "the work tree and $HOME grew to") || !strings.Contains(string(res.Stderr), "past its limit of 64.0 MiB") {
				t.Errorf("stderr does not tell why the command was killed: %q", res.Stderr)
			}
			grew := diskUsage(t, tc.where)
			t.Logf("%s grew by %d MiB on the host (limit %d MiB)", tc.where, grew>>20, growth>>20)
			if grew > growth+slack {
				t.Errorf("%d MiB landed on the host, past the limit of %d MiB and %d MiB of slack", grew>>20, growth>>20, slack>>20)
			}
			// Deleting what it wrote gives the room back.
			if res := shell(t, c, `rm -f "$HOME"/fill*.bin /workspace/node_modules/fill*.bin && echo cleaned`); res.ExitCode != 0 || res.TreeFull || string(res.Stdout) != "cleaned\n" {
				t.Errorf("the command after a full $HOME: exit %d, tree full %v, stdout %q, stderr %q", res.ExitCode, res.TreeFull, res.Stdout, res.Stderr)
			}
		})
	}
	// Rewriting the environment's own big file copies it up whole: the
	// merged view stays the same size, the upper directory does not.
	t.Run("copy up", func(t *testing.T) {
		c := sandboxtest.Start(t, d, sandbox.Spec{MaxTreeGrowth: 32 << 20, Overlays: []sandbox.Overlay{home3}})
		res := shell(t, c, `echo x >>"$HOME/dep.bin"; sleep 1; echo done`)
		if !res.TreeFull {
			t.Errorf("copying up 48 MiB under a limit of 32 MiB: exit %d, tree full %v, stderr %q", res.ExitCode, res.TreeFull, res.Stderr)
		}
	})
}

// An overlay never hides what the work tree holds at its target: a
// repository's own top-level internal/ stays visible however an
// environment kept a directory of that name. An empty directory, as the
// engine leaves behind for a mount, hides nothing and is mounted over.
func TestOverlayNeverHidesTheTree(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	tmp := t.TempDir()
	tree := sandboxtest.WorkTree(t)
	for name, data := range map[string]string{"internal/real.go": "package internal\n", "vendor": "a file\n"} {
		os.MkdirAll(filepath.Join(tree, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(tree, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(tree, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	var overlays []sandbox.Overlay
	for _, name := range []string{"internal", "vendor", "node_modules", ".venv"} {
		lower := ownedDir(t, filepath.Join(tmp, name, "lower"))
		if err := os.WriteFile(filepath.Join(lower, "KEPT"), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		overlays = append(overlays, sandbox.Overlay{Target: sandbox.WorkDir + "/" + name, Lower: lower,
			Upper: ownedDir(t, filepath.Join(tmp, name, "upper")), Work: ownedDir(t, filepath.Join(tmp, name, "work"))})
	}
	c := sandboxtest.Start(t, d, sandbox.Spec{WorkTree: tree, Overlays: overlays})
	res := shell(t, c, `for p in internal/real.go internal/KEPT vendor node_modules/KEPT .venv/KEPT; do if [ -f "$p" ]; then echo "$p: $(cat "$p")"; else echo "$p: none"; fi; done`)
	want := "internal/real.go: package internal\ninternal/KEPT: none\nvendor: a file\nnode_modules/KEPT: node_modules\n.venv/KEPT: .venv\n"
	if string(res.Stdout) != want {
		t.Fatalf("the container sees:\n%s\nwant:\n%s(stderr %q)", res.Stdout, want, res.Stderr)
	}
}
