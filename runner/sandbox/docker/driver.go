// Package docker runs the agent's commands in hardened, network-less Docker
// containers. It is the only package of agentbot that imports Docker; a
// Driver is a sandbox.Sandboxes, and the protocol it speaks to the executor
// is runner/sandbox.
//
// A Driver talks to the engine on behalf of one worker. Driver.Start creates
// a Container for a task over the task's work tree, with the design's
// defaults: no network (for the setup phase, an internal network whose only
// way out is the egress proxy: Driver.StartEgress), a read-only root
// filesystem, the work tree as the only writable bind mount (at /workspace),
// size-limited tmpfs for /tmp and $HOME, commands under a non-root user,
// every capability dropped but the executor's four, no-new-privileges,
// default seccomp, pids, memory (= memory+swap) and CPU limits, a file size
// limit (RLIMIT_FSIZE), a bound on how far a command may grow the work tree
// (Spec.MaxTreeGrowth, enforced by the executor), an init process, and an environment holding only
// what the driver sets, so no credential of the host can leak in.
//
// The container's command is the agentbot binary itself, mounted read-only,
// running "agentbot sandbox-exec --contain" (sandbox.Serve): a long-lived
// executor that reads one JSON Cmd per line from the attached stdin and
// answers one JSON Result per line on stdout. A call costs a pipe round trip
// instead of the tens of milliseconds of "docker exec", and every process a
// command starts stays under the container's pids limit, which exec'd
// processes escape. The executor is the container's root with only
// CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_DAC_READ_SEARCH (to measure
// the work tree whatever modes a command sets), and runs every command as the sandbox
// user: no process of a command can write into its pipes, read its memory
// or signal it, and none outlives its command (see sandbox.ExecOptions).
//
// Spec.Overlays give a container copy-on-write views of host directories
// (the prepared environment of runner/envcache): each is a volume of the
// local driver's overlay type, created with the container and removed with
// it. What a command writes through one lands in its upper directory, on
// the worker's disk: the executor measures each upper directory (mounted
// read-only for it), and a setup's Spec.Home, with the work tree against
// Spec.MaxTreeGrowth. An overlay is never mounted over what the work tree
// holds at its target.
//
// Container.Close stops and removes a container with a context that outlives
// the task's cancellation; Driver.RemoveOrphans removes what a killed worker
// left behind, found by the agentbot.worker label, once the caller knows
// that worker dead (the worker's lease in Redis, in agentbot's workers).
package docker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// Labels put on every container, so that a restarted worker finds the
// containers of workers that died.
const (
	LabelTask   = "agentbot.task"
	LabelWorker = "agentbot.worker"
)

// Defaults of a Spec that leaves its limits zero, as in the design's policy.
const (
	DefaultCPUs      = 2.0
	DefaultMemory    = 4 << 30
	DefaultPids      = 512
	DefaultTmpfsSize = 1 << 30
	// DefaultMaxFileSize is RLIMIT_FSIZE for every process of the sandbox:
	// a write past it fails (SIGXFSZ, then EFBIG), so no command can put a
	// huge file on the worker's disk through the work tree.
	DefaultMaxFileSize = 256 << 20
)

// Timeouts of the engine calls the driver makes on its own.
const (
	engineTimeout = 30 * time.Second
	stopGrace     = 2 * time.Second
	// answerGrace is how long past a command's own timeout the host waits for
	// its answer before it declares the executor wedged.
	answerGrace = 30 * time.Second
)

// executorPath is where the agentbot binary is mounted in the container.
const executorPath = "/agentbot"

// upperPath is where the executor sees overlay i's upper directory, to
// measure it.
func upperPath(i int) string { return fmt.Sprintf("/.agentbot/upper/%d", i) }

// Options configure a Driver.
type Options struct {
	Image        string // the sandbox image, e.g. agentbot-sandbox:dev
	Runtime      string // OCI runtime such as runsc; empty = the engine's default
	WorkerID     string // put on every container as LabelWorker
	ExecutorPath string // the static agentbot binary on the host
	Logger       *slog.Logger
}

// Driver creates and removes sandbox containers for one worker.
type Driver struct {
	cli  *client.Client
	opts Options
	log  *slog.Logger
}

// New connects to the Docker engine named by the environment (DOCKER_HOST…),
// negotiating the API version, and checks that the image and the executor
// exist.
func New(ctx context.Context, opts Options) (*Driver, error) {
	if opts.Image == "" || opts.WorkerID == "" || opts.ExecutorPath == "" {
		return nil, errors.New("sandbox: Image, WorkerID and ExecutorPath are required")
	}
	exe, err := filepath.Abs(opts.ExecutorPath)
	if err != nil {
		return nil, fmt.Errorf("sandbox executor %s: %w", opts.ExecutorPath, err)
	}
	if fi, err := os.Stat(exe); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return nil, fmt.Errorf("sandbox executor %s is not an executable file", exe)
	}
	opts.ExecutorPath = exe
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	if _, err := cli.ImageInspect(ctx, opts.Image); err != nil {
		cli.Close()
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("sandbox image %s is missing; build it with deploy/sandbox/build-offline.sh %s %s", opts.Image, flavourOf(opts.Image), opts.Image)
		}
		return nil, fmt.Errorf("inspect sandbox image %s: %w", opts.Image, err)
	}
	return &Driver{cli: cli, opts: opts, log: opts.Logger.With("worker", opts.WorkerID)}, nil
}

// flavourOf is the toolchain flavour of deploy/sandbox/build-offline.sh
// that an image's tag names (its default tags are agentbot-sandbox:dev for
// go, :python and :node), or the choice of all three for a tag of the
// operator's own.
func flavourOf(image string) string {
	tag := image[strings.LastIndex(image, ":")+1:]
	if strings.Contains(tag, "/") {
		tag = "" // a registry's port, not a tag
	}
	for _, f := range []string{"go", "python", "node"} {
		if tag == f || strings.HasSuffix(tag, "-"+f) {
			return f
		}
	}
	if tag == "dev" {
		return "go"
	}
	return "go|python|node"
}

// Close releases the connection to the engine; containers are left alone.
func (d *Driver) Close() error { return d.cli.Close() }

// caBundlePath is where Spec.CABundle is mounted.
const caBundlePath = "/etc/ssl/agentbot/ca-bundle.pem"

// Container is a running sandbox with its executor attached.
type Container struct {
	ID string

	d       *Driver
	log     *slog.Logger
	conn    types.HijackedResponse
	answers <-chan sandbox.Answer
	done    chan struct{}    // closed by Close: the listener stops delivering
	stderr  *sandbox.Capture // the executor's own stderr, for errors when it dies

	mu     sync.Mutex // one command at a time
	broken error      // set once the executor can no longer be trusted

	maxTreeGrowth int64 // Spec.MaxTreeGrowth

	closeMu sync.Mutex // Close may run while a command is waited for
	closed  bool

	volumes []string // the overlay volumes, removed with the container
}

// Name is the container's id.
func (c *Container) Name() string { return c.ID }

// Start creates the container, attaches to the executor and starts it.
// The Box is a *Container.
func (d *Driver) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Box, error) {
	overlays, err := d.shown(spec)
	if err != nil {
		return nil, err
	}
	spec.Overlays = overlays
	cfg, host, err := d.config(spec)
	if err != nil {
		return nil, err
	}
	volumes, err := d.overlayVolumes(ctx, spec, host)
	if err != nil {
		return nil, err
	}
	// Named, so that a container the engine made although its answer never
	// came (the task cancelled while the engine worked) can be removed.
	name := "agentbot-" + strings.ToLower(rand.Text())
	created, err := d.cli.ContainerCreate(ctx, cfg, host, nil, nil, name)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineTimeout)
		defer cancel()
		if rerr := d.remove(rctx, name); rerr != nil {
			d.log.Warn("remove a sandbox whose creation failed", "task", spec.TaskID, "err", rerr)
		}
		d.removeVolumes(ctx, volumes)
		return nil, fmt.Errorf("create sandbox for task %s: %w", spec.TaskID, err)
	}
	c := &Container{ID: created.ID, d: d, volumes: volumes, maxTreeGrowth: spec.MaxTreeGrowth, log: d.log.With("task", spec.TaskID, "container", shortID(created.ID))}
	// Attach before start, so that nothing the executor writes is missed.
	conn, err := d.cli.ContainerAttach(ctx, c.ID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err == nil {
		c.conn = conn
		c.listen()
		err = d.cli.ContainerStart(ctx, c.ID, container.StartOptions{})
	}
	if err != nil {
		if cerr := c.Close(ctx); cerr != nil {
			c.log.Warn("remove a sandbox that failed to start", "err", cerr)
		}
		return nil, fmt.Errorf("start sandbox for task %s: %w", spec.TaskID, err)
	}
	c.log.Debug("sandbox started", "network", spec.Network)
	return c, nil
}

func (d *Driver) config(spec sandbox.Spec) (*container.Config, *container.HostConfig, error) {
	if spec.TaskID == "" {
		return nil, nil, errors.New("sandbox spec: TaskID is required")
	}
	tree, err := filepath.Abs(spec.WorkTree)
	if err != nil {
		return nil, nil, fmt.Errorf("sandbox work tree %q: %w", spec.WorkTree, err)
	}
	if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
		return nil, nil, fmt.Errorf("sandbox work tree %s is not a directory", tree)
	}
	cpus := orDefault(spec.CPUs, DefaultCPUs)
	memory := orDefault(spec.Memory, DefaultMemory)
	pids := orDefault(spec.Pids, DefaultPids)
	tmpfs := orDefault(spec.TmpfsSize, DefaultTmpfsSize)
	fsize := orDefault(spec.MaxFileSize, DefaultMaxFileSize)
	network := container.NetworkMode("none")
	var dns []string
	env := append([]string{"HOME=" + sandbox.Home, "TMPDIR=/tmp", "LANG=C.UTF-8", "USER=sandbox"}, spec.Env...)
	eg, ok := spec.Egress.(*Egress)
	if spec.Egress != nil && !ok {
		return nil, nil, fmt.Errorf("sandbox egress %T was not started by the Docker driver", spec.Egress)
	}
	switch {
	case eg != nil:
		network = container.NetworkMode(eg.Network)
		env = append(env, eg.Env()...)
		// The proxy resolves names; Docker's resolver on the network would
		// otherwise forward the container's queries out, a channel past
		// the proxy. A nameserver on the container's own loopback, where
		// nothing listens, answers nothing.
		dns = []string{"127.0.0.1"}
	case spec.Network:
		network = "bridge"
	}
	mounts := []mount.Mount{
		{Type: mount.TypeBind, Source: tree, Target: sandbox.WorkDir},
		{Type: mount.TypeBind, Source: d.opts.ExecutorPath, Target: executorPath, ReadOnly: true},
	}
	caBundle := spec.CABundle
	if eg != nil && eg.CABundle != "" {
		caBundle = eg.CABundle
	}
	if caBundle != "" {
		ca, err := filepath.Abs(caBundle)
		if err != nil {
			return nil, nil, fmt.Errorf("sandbox CA bundle %q: %w", caBundle, err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: ca, Target: caBundlePath, ReadOnly: true})
		for _, k := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"} {
			env = append(env, k+"="+caBundlePath)
		}
	}
	cfg := &container.Config{
		Image: cmp.Or(spec.Image, d.opts.Image),
		// The executor alone is root, to run every command as the sandbox
		// user and to kill what a command leaves behind; see
		// sandbox.ExecOptions.Contain.
		User:       "0:0",
		Cmd:        []string{executorPath, "sandbox-exec", "--contain"},
		WorkingDir: sandbox.WorkDir,
		// Only what is listed here: never the worker's own environment.
		Env:          env,
		Labels:       map[string]string{LabelTask: spec.TaskID, LabelWorker: d.opts.WorkerID},
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
	}
	tmpfsMounts := map[string]string{
		"/tmp":       fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", tmpfs),
		sandbox.Home: fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=0700,uid=%d,gid=%d", tmpfs, sandbox.UID, sandbox.GID),
	}
	if spec.Home != "" {
		home, err := hostDir("sandbox home", spec.Home)
		if err != nil {
			return nil, nil, err
		}
		delete(tmpfsMounts, sandbox.Home)
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: home, Target: sandbox.Home})
	}
	if spec.Home != "" {
		cfg.Cmd = append(cfg.Cmd, "--count", sandbox.Home)
	}
	for i, o := range spec.Overlays {
		if !path.IsAbs(o.Target) || path.Clean(o.Target) != o.Target || o.Target == "/" {
			return nil, nil, fmt.Errorf("sandbox overlay target %q is not a clean absolute path", o.Target)
		}
		if o.Target == sandbox.Home {
			delete(tmpfsMounts, sandbox.Home)
		}
		for _, dir := range []string{o.Lower, o.Upper, o.Work} {
			if _, err := hostDir("sandbox overlay "+o.Target, dir); err != nil {
				return nil, nil, err
			}
		}
		// What the container writes through the overlay lands in Upper:
		// the executor measures it there, not through the merged view,
		// where a copied-up or whited-out file of Lower costs what it
		// does not.
		upper, _ := filepath.Abs(o.Upper)
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: upper, Target: upperPath(i), ReadOnly: true})
		cfg.Cmd = append(cfg.Cmd, "--count", upperPath(i))
		if rel, ok := strings.CutPrefix(o.Target, sandbox.WorkDir+"/"); ok {
			cfg.Cmd = append(cfg.Cmd, "--skip", rel)
		}
	}
	withInit := true
	host := &container.HostConfig{
		NetworkMode:    network,
		ReadonlyRootfs: true,
		Mounts:         mounts,
		Tmpfs:          tmpfsMounts,
		CapDrop:        []string{"ALL"},
		// Only what the executor needs: commands run as a non-root user
		// under no-new-privileges, so they can never hold these.
		// CAP_DAC_READ_SEARCH lets it walk the work tree to measure it
		// even where a command took every permission off a directory.
		CapAdd:      []string{"CAP_SETUID", "CAP_SETGID", "CAP_KILL", "CAP_DAC_READ_SEARCH"},
		SecurityOpt: []string{"no-new-privileges"},
		// POSIX shared memory stays available to tools, bounded and private.
		IpcMode: "private",
		ShmSize: 64 << 20,
		Init:    &withInit,
		Runtime: d.opts.Runtime,
		DNS:     dns,
		// Answers go over the attach stream; a log driver would keep a
		// second copy of everything on the host's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			NanoCPUs:   int64(cpus * 1e9),
			Memory:     memory,
			MemorySwap: memory,
			PidsLimit:  &pids,
			Ulimits:    []*container.Ulimit{{Name: "fsize", Soft: fsize, Hard: fsize}},
		},
	}
	return cfg, host, nil
}

// shown is spec.Overlays without those that would hide what the work tree
// holds at their target: a file, a symlink or a directory with entries
// (a repository's own top-level internal/ is never covered by a directory
// some environment kept). An empty directory hides nothing: the engine
// leaves one behind for each mount.
func (d *Driver) shown(spec sandbox.Spec) ([]sandbox.Overlay, error) {
	if len(spec.Overlays) == 0 {
		// Nothing to hide; a work tree that is not there is config's to refuse.
		return nil, nil
	}
	root, err := os.OpenRoot(spec.WorkTree)
	if err != nil {
		return nil, fmt.Errorf("sandbox work tree %q: %w", spec.WorkTree, err)
	}
	defer root.Close()
	var out []sandbox.Overlay
	for _, o := range spec.Overlays {
		rel, ok := strings.CutPrefix(o.Target, sandbox.WorkDir+"/")
		if !ok {
			out = append(out, o)
			continue
		}
		hides, err := holds(root, rel)
		if err != nil {
			return nil, fmt.Errorf("sandbox overlay %s: %w", o.Target, err)
		}
		if hides {
			d.log.Info("overlay left out: the work tree has its own", "task", spec.TaskID, "target", o.Target)
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// holds reports whether the tree at root has something at rel that a
// mount there would hide.
func holds(root *os.Root, rel string) (bool, error) {
	fi, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !fi.IsDir():
		return true, nil
	}
	dir, err := root.Open(rel)
	if err != nil {
		return false, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	return len(names) > 0, err
}

// hostDir is dir made absolute, once it is known to be a directory.
func hostDir(what, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", what, dir, err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s %s is not a directory", what, abs)
	}
	return abs, nil
}

// overlayVolumes creates one local volume of the overlay type per overlay
// of spec and mounts it in host. The volumes are the container's own and
// go with it; on error none is left.
func (d *Driver) overlayVolumes(ctx context.Context, spec sandbox.Spec, host *container.HostConfig) ([]string, error) {
	var names []string
	for i, o := range spec.Overlays {
		lower, _ := filepath.Abs(o.Lower)
		upper, _ := filepath.Abs(o.Upper)
		work, _ := filepath.Abs(o.Work)
		// overlayfs takes these in one comma-separated option string.
		if strings.ContainsAny(lower+upper+work, ",:") {
			d.removeVolumes(ctx, names)
			return nil, fmt.Errorf("sandbox overlay %s: a directory holds ',' or ':'", o.Target)
		}
		name := fmt.Sprintf("agentbot-overlay-%s-%d", rand.Text(), i)
		_, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{
			Name: name, Driver: "local",
			DriverOpts: map[string]string{"type": "overlay", "device": "overlay",
				"o": fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work)},
			Labels: map[string]string{LabelTask: spec.TaskID, LabelWorker: d.opts.WorkerID},
		})
		if err != nil {
			d.removeVolumes(ctx, names)
			return nil, fmt.Errorf("create overlay %s for task %s: %w", o.Target, spec.TaskID, err)
		}
		names = append(names, name)
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeVolume, Source: name, Target: o.Target,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	return names, nil
}

// removeVolumes removes the named volumes, once no container uses them.
func (d *Driver) removeVolumes(ctx context.Context, names []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineTimeout)
	defer cancel()
	for _, name := range names {
		if err := d.cli.VolumeRemove(ctx, name, true); err != nil && !cerrdefs.IsNotFound(err) {
			d.log.Warn("remove overlay volume", "volume", name, "err", err)
		}
	}
}

// ImageID is the id of the local image ref: what a cache keyed by image
// must use, since a tag can be moved to another image.
func (d *Driver) ImageID(ctx context.Context, ref string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	img, err := d.cli.ImageInspect(ctx, cmp.Or(ref, d.opts.Image))
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", fmt.Errorf("sandbox image %s is missing", cmp.Or(ref, d.opts.Image))
		}
		return "", fmt.Errorf("inspect sandbox image %s: %w", cmp.Or(ref, d.opts.Image), err)
	}
	return img.ID, nil
}

// Image is the image of a Spec that names none.
func (d *Driver) Image() string { return d.opts.Image }

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// listen demultiplexes the attach stream: answers from the executor's stdout
// go to c.answers, which is closed when the executor's output ends.
func (c *Container) listen() {
	answers := make(chan sandbox.Answer)
	c.answers = answers
	c.done = make(chan struct{})
	c.stderr = sandbox.NewCapture(8 << 10)
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, c.stderr, c.conn.Reader)
		pw.CloseWithError(err)
	}()
	go func() {
		defer close(answers)
		dec := json.NewDecoder(pr)
		for {
			var a sandbox.Answer
			if err := dec.Decode(&a); err != nil {
				pr.CloseWithError(err)
				return
			}
			select {
			case answers <- a:
			case <-c.done:
				return
			}
		}
	}()
}

// Run runs one command through the executor and waits for its result. A
// command that fails is a Result with its exit code, not an error; errors
// mean the command was refused (ErrInvalidCmd) or the sandbox failed. If ctx
// ends first, Run returns its error and the container is unusable: Close it.
func (c *Container) Run(ctx context.Context, cmd sandbox.Cmd) (sandbox.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return sandbox.Result{}, c.broken
	}
	select {
	case <-c.done:
		return sandbox.Result{}, c.closedErr()
	default:
	}
	if cmd.MaxTreeGrowth == 0 {
		cmd.MaxTreeGrowth = c.maxTreeGrowth
	}
	req, err := json.Marshal(cmd)
	if err != nil {
		return sandbox.Result{}, fmt.Errorf("encode command: %w", err)
	}
	timeout := cmd.Timeout
	if timeout <= 0 {
		timeout = sandbox.DefaultTimeout
	}
	wedged := time.NewTimer(timeout + answerGrace)
	defer wedged.Stop()
	// A write blocks only while the executor is busy reading; ctx still wins.
	stop := context.AfterFunc(ctx, func() { c.conn.Conn.SetWriteDeadline(time.Unix(1, 0)) })
	_, err = c.conn.Conn.Write(append(req, '\n'))
	stop()
	if err != nil {
		return sandbox.Result{}, c.fail(ctx, fmt.Errorf("send command: %w", err))
	}
	select {
	case a, ok := <-c.answers:
		if !ok {
			select {
			case <-c.done:
				return sandbox.Result{}, c.closedErr()
			default:
			}
			return sandbox.Result{}, c.fail(ctx, c.exited(ctx))
		}
		if err := a.Err(); err != nil {
			return sandbox.Result{}, err
		}
		return a.Result, nil
	case <-c.done:
		return sandbox.Result{}, c.closedErr()
	case <-ctx.Done():
		return sandbox.Result{}, c.fail(ctx, fmt.Errorf("command abandoned: %w", context.Cause(ctx)))
	case <-wedged.C:
		return sandbox.Result{}, c.fail(ctx, fmt.Errorf("no answer %s past the command's timeout", answerGrace))
	}
}

// fail marks the container broken: the executor may still be running the
// abandoned command, so its next answer would not match the next request.
func (c *Container) fail(ctx context.Context, err error) error {
	c.broken = fmt.Errorf("sandbox %s: %w", shortID(c.ID), err)
	if ctx.Err() != nil {
		return fmt.Errorf("sandbox %s: %w", shortID(c.ID), ctx.Err())
	}
	return c.broken
}

func (c *Container) closedErr() error {
	return fmt.Errorf("sandbox %s: closed", shortID(c.ID))
}

// exited explains why the executor's output ended, from the container's state.
func (c *Container) exited(ctx context.Context) error {
	out, _ := c.stderr.Bytes()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineTimeout)
	defer cancel()
	info, err := c.d.cli.ContainerInspect(ctx, c.ID)
	if err != nil || info.State == nil {
		return fmt.Errorf("executor exited (stderr: %q)", out)
	}
	if info.State.OOMKilled {
		return fmt.Errorf("executor killed: out of memory")
	}
	return fmt.Errorf("executor exited with status %d (stderr: %q)", info.State.ExitCode, out)
}

// Close stops, kills and removes the container. It runs on a context that
// outlives ctx's cancellation, so a cancelled task still cleans up; a
// container that is already gone counts as removed.
func (c *Container) Close(ctx context.Context) error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.conn.Conn != nil {
		close(c.done) // a waiting Run returns at once
		c.conn.Close()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineTimeout)
	defer cancel()
	grace := int(stopGrace / time.Second)
	if err := c.d.cli.ContainerStop(ctx, c.ID, container.StopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) {
		c.log.Warn("stop sandbox", "err", err)
	}
	err := c.d.remove(ctx, c.ID)
	if err == nil {
		c.d.removeVolumes(ctx, c.volumes)
	}
	return err
}

func (d *Driver) remove(ctx context.Context, id string) error {
	err := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove sandbox %s: %w", shortID(id), err)
	}
	return nil
}

// RemoveOrphans removes every agentbot container whose worker is known dead,
// such as those of a worker killed with SIGKILL, and returns how many it
// removed. alive is asked once per container, with the worker id of its
// LabelWorker label; a container is removed only when alive says false
// without error, so a worker that cannot tell (Redis unreachable) removes
// nothing. A worker should count itself alive.
func (d *Driver) RemoveOrphans(ctx context.Context, alive func(ctx context.Context, workerID string) (bool, error)) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, engineTimeout)
	defer cancel()
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelWorker))})
	if err != nil {
		return 0, fmt.Errorf("list sandboxes: %w", err)
	}
	removed := 0
	var errs []error
	for _, c := range list {
		worker := c.Labels[LabelWorker]
		live, err := alive(ctx, worker)
		if err != nil {
			errs = append(errs, fmt.Errorf("is the worker of sandbox %s alive: %w", shortID(c.ID), err))
			continue
		}
		if live {
			continue
		}
		if err := d.remove(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
		d.log.Info("removed orphan sandbox", "container", shortID(c.ID), "dead_worker", worker, "task", c.Labels[LabelTask])
	}
	// The overlay volumes of those containers, now unused.
	vols, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelWorker))})
	if err != nil {
		return removed, errors.Join(append(errs, fmt.Errorf("list overlay volumes: %w", err))...)
	}
	for _, v := range vols.Volumes {
		if live, err := alive(ctx, v.Labels[LabelWorker]); err != nil || live {
			continue
		}
		if err := d.cli.VolumeRemove(ctx, v.Name, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove overlay volume %s: %w", v.Name, err))
		}
	}
	errs = append(errs, d.removeOrphanNetworks(ctx, alive))
	return removed, errors.Join(errs...)
}

func shortID(id string) string { return id[:min(12, len(id))] }
