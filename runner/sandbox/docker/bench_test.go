package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// BenchmarkStartToFirstCommand measures creating and starting a container
// until the executor has answered its first command.
func BenchmarkStartToFirstCommand(b *testing.B) {
	d := sandboxtest.NewDriver(b)
	tree := sandboxtest.WorkTree(b)
	ctx := context.Background()
	for b.Loop() {
		c, err := d.Start(ctx, sandbox.Spec{TaskID: "bench", WorkTree: tree})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Run(ctx, sandbox.Cmd{Argv: []string{"true"}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := c.Close(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkRoundTrip runs "true" through the executor and through "docker
// exec" (the engine API, as the CLI uses it) alternately in one container,
// and reports the p50 and p99 of each and the ratio of the medians. It also
// reports the transport alone (a request the executor refuses without
// starting a process) and the command's own time inside the container. The
// minimums say what a call costs when nothing else wants the CPU, which the
// medians of a busy machine do not.
func BenchmarkRoundTrip(b *testing.B) {
	d := sandboxtest.NewDriver(b)
	c := sandboxtest.Start(b, d, sandbox.Spec{})
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	var viaExecutor, inside, transport, viaDockerExec []time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := c.Run(ctx, sandbox.Cmd{}); !errors.Is(err, sandbox.ErrInvalidCmd) {
			b.Fatalf("empty command: %v", err)
		}
		transport = append(transport, time.Since(start))
		start = time.Now()
		res, err := c.Run(ctx, sandbox.Cmd{Argv: []string{"true"}})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("executor: %+v, %v", res, err)
		}
		viaExecutor = append(viaExecutor, time.Since(start))
		inside = append(inside, res.Duration)
		start = time.Now()
		if err := dockerExec(ctx, cli, c.Name(), "65532:65532", "true"); err != nil {
			b.Fatal(err)
		}
		viaDockerExec = append(viaDockerExec, time.Since(start))
	}
	b.ReportMetric(ms(slices.Min(viaExecutor)), "executor-min-ms")
	b.ReportMetric(ms(slices.Min(viaDockerExec)), "dockerexec-min-ms")
	b.ReportMetric(ms(slices.Min(inside)), "command-min-ms")
	e50, e99 := percentiles(viaExecutor)
	i50, _ := percentiles(inside)
	t50, _ := percentiles(transport)
	b.ReportMetric(ms(t50), "transport-p50-ms")
	d50, d99 := percentiles(viaDockerExec)
	// The command's own run inside the container, fork and exec included.
	b.ReportMetric(ms(i50), "command-p50-ms")
	b.ReportMetric(ms(e50), "executor-p50-ms")
	b.ReportMetric(ms(e99), "executor-p99-ms")
	b.ReportMetric(ms(d50), "dockerexec-p50-ms")
	b.ReportMetric(ms(d99), "dockerexec-p99-ms")
	b.ReportMetric(float64(d50)/float64(e50), "speedup-p50-x")
}

// dockerExec runs argv as user with "docker exec" semantics: create, attach,
// wait for the output to end, read the exit code.
func dockerExec(ctx context.Context, cli *client.Client, id, user string, argv ...string) error {
	exec, err := cli.ContainerExecCreate(ctx, id, container.ExecOptions{User: user, Cmd: argv, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	att, err := cli.ContainerExecAttach(ctx, exec.ID, container.ExecAttachOptions{})
	if err != nil {
		return err
	}
	io.Copy(io.Discard, att.Reader)
	att.Close()
	st, err := cli.ContainerExecInspect(ctx, exec.ID)
	if err != nil {
		return err
	}
	if st.ExitCode != 0 {
		return fmt.Errorf("docker exec %v: exit %d", argv, st.ExitCode)
	}
	return nil
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
