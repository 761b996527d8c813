package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
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
	overlay := func(n string) docker.Overlay {
		return docker.Overlay{Target: sandbox.Home, Lower: lower,
			Upper: ownedDir(t, filepath.Join(tmp, n, "upper")), Work: ownedDir(t, filepath.Join(tmp, n, "work"))}
	}
	c := sandboxtest.Start(t, d, docker.Spec{Overlays: []docker.Overlay{overlay("a")}})
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
	c2 := sandboxtest.Start(t, d, docker.Spec{Overlays: []docker.Overlay{overlay("b")}})
	res = shell(t, c2, `cat "$HOME/dep.txt"; ls "$HOME"`)
	if string(res.Stdout) != "original\ndep.txt\n" {
		t.Fatalf("second container sees %q", res.Stdout)
	}
}

func TestHomeIsKept(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	home := ownedDir(t, filepath.Join(t.TempDir(), "home"))
	c := sandboxtest.Start(t, d, docker.Spec{Home: home})
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
	for name, o := range map[string]docker.Overlay{
		"relative target": {Target: "home", Lower: dir, Upper: dir, Work: dir},
		"missing lower":   {Target: "/x", Lower: filepath.Join(dir, "none"), Upper: dir, Work: dir},
		"comma":           {Target: "/x", Lower: ownedDir(t, filepath.Join(dir, "a,b")), Upper: dir, Work: dir},
	} {
		_, err := d.Start(t.Context(), docker.Spec{TaskID: "bad", WorkTree: sandboxtest.WorkTree(t), Overlays: []docker.Overlay{o}})
		if err == nil || !strings.Contains(err.Error(), "overlay") {
			t.Errorf("%s: got %v, want an overlay error", name, err)
		}
	}
}
