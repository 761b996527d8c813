// Package sandboxtest gives tests sandboxes of two kinds.
//
// Host sandboxes (NewHost) run the real executor in the test's own process
// over the work tree, speaking the wire protocol over pipes: no Docker and
// no container to start, for tests of the logic around sandboxes. They
// isolate nothing, so a test whose commands act as an attacker would, or
// that is about isolation, limits, images or network, uses containers; a
// Host refuses a spec that asks for what only a container gives.
//
// Containers run on the local Docker engine: the image (built offline when
// missing) and marked images derived from it, a static executor binary, a
// Driver whose containers are removed when the test ends, a work tree the
// sandbox user may write, and a git server on the host with the address of
// Docker's bridge, where setups reach it through the egress proxy. Where
// Docker is not reachable the test is skipped, except under CI=true, where
// a missing Docker is a failure.
//
// A package whose tests start sandboxes builds the executor once for all of
// them from its TestMain:
//
//	func TestMain(m *testing.M) { sandboxtest.Main(m) }
package sandboxtest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// DefaultImage is the tag deploy/sandbox/build-offline.sh builds.
const DefaultImage = "agentbot-sandbox:dev"

// executorEnv carries the executor built by Main to the tests of its process.
const executorEnv = "AGENTBOT_TEST_SANDBOX_EXECUTOR"

// executorPkg is the executor command built for the tests.
const executorPkg = "github.com/agentbot/agentbot/runner/sandbox/sandboxtest/executor"

// Main builds the executor once, runs the tests, calls each of after and
// removes the executor. Tests that run without Main build their own
// executor in Executor.
func Main(m *testing.M, after ...func()) {
	dir, err := os.MkdirTemp("", "agentbot-executor-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		os.Exit(1)
	}
	exe, err := buildExecutor(dir)
	if err != nil {
		// Not fatal here: tests that need it fail or skip with the reason.
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
	} else {
		os.Setenv(executorEnv, exe)
	}
	code := m.Run()
	for _, f := range after {
		f()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// RequireDocker skips the test when the engine is not reachable, or fails it
// under CI=true.
func RequireDocker(t testing.TB) {
	t.Helper()
	err := withEngine(func(ctx context.Context, cli *client.Client) error {
		_, err := cli.Ping(ctx)
		return err
	})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker engine is not reachable; CI requires it: %v", err)
		}
		t.Skipf("docker engine is not reachable: %v", err)
	}
}

// Image returns the sandbox image to test with (AGENTBOT_SANDBOX_IMAGE or
// DefaultImage), building it with deploy/sandbox/build-offline.sh when it is
// missing.
func Image(t testing.TB) string {
	t.Helper()
	image := os.Getenv("AGENTBOT_SANDBOX_IMAGE")
	if image == "" {
		image = DefaultImage
	}
	ensureImage(t, image)
	return image
}

// withEngine calls f with a client of the local engine and a short deadline.
func withEngine(f func(context.Context, *client.Client) error) error {
	return withEngineFor(10*time.Second, f)
}

// withEngineFor calls f with a client of the local engine and the deadline
// d away.
func withEngineFor(d time.Duration, f func(context.Context, *client.Client) error) error {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return f(ctx, cli)
}

// Executor returns a static executor binary for sandbox containers: the one
// Main built, or one built now for this test.
func Executor(t testing.TB) string {
	t.Helper()
	if exe := os.Getenv(executorEnv); exe != "" {
		return exe
	}
	exe, err := buildExecutor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func buildExecutor(dir string) (string, error) {
	exe := filepath.Join(dir, "agentbot")
	cmd := exec.Command(goTool(), "build", "-trimpath", "-o", exe, executorPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build sandbox executor: %v\n%s", err, out)
	}
	return exe, nil
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// NewDriver returns a Driver for the sandbox image with a fresh worker id;
// every container it started is removed when the test ends.
func NewDriver(t testing.TB) *docker.Driver {
	t.Helper()
	RequireDocker(t)
	image, exe := Image(t), Executor(t)
	worker := "test-" + rand.Text()
	d, err := docker.New(context.Background(), docker.Options{Image: image, WorkerID: worker, ExecutorPath: exe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := d.RemoveOrphans(context.Background(), func(_ context.Context, w string) (bool, error) { return w != worker, nil }); err != nil {
			t.Errorf("remove the test's sandboxes: %v", err)
		}
		d.Close()
	})
	return d
}

// Start starts a container for spec, filling in a TaskID and a WorkTree
// when they are empty, and closes it when the test ends.
func Start(t testing.TB, d *docker.Driver, spec sandbox.Spec) sandbox.Box {
	t.Helper()
	if spec.TaskID == "" {
		spec.TaskID = "task-" + rand.Text()
	}
	if spec.WorkTree == "" {
		spec.WorkTree = WorkTree(t)
	}
	c, err := d.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("close sandbox: %v", err)
		}
	})
	return c
}

// WorkTree returns an empty directory the sandbox user may write: owned by
// it when the test runs as root, world-writable otherwise.
func WorkTree(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, sandbox.UID, sandbox.GID); err != nil {
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// MustRun runs cmd in c and fails the test when the sandbox (not the
// command) fails.
func MustRun(t testing.TB, c sandbox.Box, cmd sandbox.Cmd) sandbox.Result {
	t.Helper()
	// The command's own timeout bounds the wait.
	res, err := c.Run(t.Context(), cmd)
	if err != nil {
		t.Fatalf("run %v%s: %v", cmd.Argv, cmd.Shell, err)
	}
	return res
}

// ToolchainImage returns the sandbox image of one flavour of
// deploy/sandbox/build-offline.sh (go, python, node) to test with:
// AGENTBOT_SANDBOX_IMAGE_<FLAVOUR>, else Image for go (the script's
// default flavour) and the script's own tag, agentbot-sandbox:<flavour>,
// for the others, which is the image "agentbot config init" writes; built
// when it is missing.
func ToolchainImage(t testing.TB, flavour string) string {
	t.Helper()
	RequireDocker(t)
	image := os.Getenv("AGENTBOT_SANDBOX_IMAGE_" + strings.ToUpper(flavour))
	if image == "" && flavour == "go" {
		return Image(t)
	}
	if image == "" {
		image = "agentbot-sandbox:" + flavour
	}
	ensureImage(t, image, flavour)
	return image
}

// ensureImage builds image with deploy/sandbox/build-offline.sh, passing
// args before the image's name, when the engine does not have it.
func ensureImage(t testing.TB, image string, args ...string) {
	t.Helper()
	err := withEngine(func(ctx context.Context, cli *client.Client) error {
		_, err := cli.ImageInspect(ctx, image)
		return err
	})
	if err == nil {
		return
	}
	if !cerrdefs.IsNotFound(err) {
		t.Fatalf("inspect sandbox image %s: %v", image, err)
	}
	root, err := ostest.ModuleRoot()
	if err != nil {
		t.Fatalf("sandbox image %s is missing and the build script cannot be found: %v", image, err)
	}
	script := filepath.Join(root, "deploy", "sandbox", "build-offline.sh")
	args = append(args, image)
	t.Logf("sandbox image %s is missing; building it with %s %s (a few minutes)", image, script, strings.Join(args, " "))
	if out, err := exec.Command(script, args...).CombinedOutput(); err != nil {
		t.Fatalf("build sandbox image %s with %s (needs root and debootstrap): %v\n%s", image, script, err, out)
	}
}

// MarkerPath is where an image of MarkedImage holds its own name.
const MarkerPath = "/etc/agentbot-test-image"

// MarkedImage returns an image of its own derived from Image, offline and in
// a moment: Image with MarkerPath added, holding the new image's name, so
// that a command can tell which image it runs in. The image is removed when
// the test ends.
func MarkedImage(t testing.TB) string {
	t.Helper()
	base := Image(t)
	name := "agentbot-sandbox:test-" + rand.Text()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	content := name + "\n"
	if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(MarkerPath, "/"), Mode: 0o644, Size: int64(len(content))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// Removed even when the commit gave up waiting: the engine may finish it.
	t.Cleanup(func() {
		// Removing a layer takes as long as committing it did.
		err := withEngineFor(2*time.Minute, func(ctx context.Context, cli *client.Client) error {
			_, err := cli.ImageRemove(ctx, name, image.RemoveOptions{PruneChildren: true})
			return err
		})
		if err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove test image %s: %v", name, err)
		}
	})
	// The container is never started: its file system takes the marker and
	// becomes the image, with the base image's configuration. Committing it
	// takes seconds on a fuse-overlayfs engine, more when the machine is busy.
	err := withEngineFor(2*time.Minute, func(ctx context.Context, cli *client.Client) error {
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: base}, nil, nil, nil, "")
		if err != nil {
			return fmt.Errorf("create a container of %s: %w", base, err)
		}
		defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true})
		if err := cli.CopyToContainer(ctx, c.ID, "/", &layer, container.CopyToContainerOptions{}); err != nil {
			return fmt.Errorf("add %s: %w", MarkerPath, err)
		}
		if _, err := cli.ContainerCommit(ctx, c.ID, container.CommitOptions{Reference: name}); err != nil {
			return fmt.Errorf("commit %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("derive an image from %s: %v", base, err)
	}
	return name
}

// ImageFiles returns the regular files under dir in image, by their path
// below dir's parent ("wheel/__init__.py" for dir
// /usr/lib/python3/dist-packages/wheel), read from a container that is
// never started: a test takes what the image holds without running it.
func ImageFiles(t testing.TB, image, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := withEngineFor(time.Minute, func(ctx context.Context, cli *client.Client) error {
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: image}, nil, nil, nil, "")
		if err != nil {
			return fmt.Errorf("create a container of %s: %w", image, err)
		}
		defer cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, container.RemoveOptions{Force: true})
		rc, _, err := cli.CopyFromContainer(ctx, c.ID, dir)
		if err != nil {
			return fmt.Errorf("copy %s: %w", dir, err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", dir, err)
			}
			if h.Typeflag != tar.TypeReg {
				continue
			}
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("read %s: %w", h.Name, err)
			}
		}
	})
	if err != nil {
		t.Fatalf("files of %s in %s: %v", dir, image, err)
	}
	return files
}
