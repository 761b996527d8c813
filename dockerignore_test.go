package agentbot

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// TestDockerignoreKeepsSecretsOut builds a context shaped like this
// repository, with secrets, history and binaries planted in it, through the
// legacy builder (which reads only the root .dockerignore) into a FROM
// scratch image, and lists what reached it.
func TestDockerignoreKeepsSecretsOut(t *testing.T) {
	sandboxtest.RequireDocker(t)
	if _, err := exec.LookPath("docker"); err != nil {
		t.Fatalf("the engine answers but there is no docker CLI to build with: %v", err)
	}
	ignore, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]bool{ // path: whether it must reach the context
		"go.mod": true, "go.sum": true, "app.yml": true, "manifest.go": true,
		"cmd/agentbot/main.go":                       true,
		"webhook/webhooktest/testdata/issue.json":    true,
		"deploy/Dockerfile":                          true,
		".git/config":                                false,
		"vendor/x/.git/HEAD":                         false,
		"bin/agentbot":                               false,
		"agentbot":                                   false,
		"deploy/secrets/webhook-secret":              false,
		"app-dir/private-key.pem":                    false,
		"app-dir/webhook-secret":                     false,
		"app-dir/client-secret":                      false,
		"keys/tls.key":                               false,
		".env":                                       false,
		"deploy/.env.production":                     false,
		"cmd/agentbot/agentbot.test":                 false,
		"deploy/helm/agentbot/templates/intake.yaml": false,
	}
	for name := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.WriteFile(filepath.Join(dir, ".dockerignore"), ignore, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ctx.Dockerfile"), []byte("FROM scratch\nCOPY . /ctx/\n"), 0o644))

	tag := "agentbot-dockerignore-test:" + strings.ToLower(filepath.Base(dir))
	build := exec.Command("docker", "build", "-q", "-f", "ctx.Dockerfile", "-t", tag, ".")
	build.Dir, build.Env = dir, append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", tag).Run() })
	out, err := exec.Command("docker", "create", tag, "/none").Output()
	if err != nil {
		t.Fatalf("docker create: %v", err)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("docker", "rm", id).Run() })
	export := exec.Command("docker", "export", id)
	r, err := export.StdoutPipe()
	must(t, err)
	must(t, export.Start())
	var got []string
	for tr := tar.NewReader(r); ; {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		if h.Typeflag == tar.TypeReg {
			if rel, ok := strings.CutPrefix(h.Name, "ctx/"); ok {
				got = append(got, rel)
			}
		}
	}
	must(t, export.Wait())
	for name, want := range files {
		if slices.Contains(got, name) != want {
			t.Errorf("%s reached the build context: %v; want %v", name, !want, want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
