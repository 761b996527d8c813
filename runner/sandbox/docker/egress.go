package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/agentbot/agentbot/runner/egress"
	"github.com/agentbot/agentbot/runner/sandbox"
)

// The egress proxy's container: its port on the internal network and how
// long it may take to say it is ready.
const (
	proxyPort    = 3128
	proxyReady   = 30 * time.Second
	proxyMemory  = 256 << 20
	proxyPids    = 128
	inhibitIPv4  = "com.docker.network.bridge.inhibit_ipv4"
	networkLabel = "agentbot.egress"
)

// Egress is a setup phase's only way out: an internal Docker network on
// which the host has no address, so that a container attached to it routes
// nowhere, and on it the egress proxy ("agentbot egress-proxy"), a
// container also on the default bridge that connects only to allowed
// hosts. A Spec with Egress set joins the network and gets the proxy
// variables.
type Egress struct {
	// Network is the internal network's name; ProxyURL the proxy's address
	// on it.
	Network  string
	ProxyURL string
	// CABundle, when the proxy intercepts a registry's TLS to add its
	// credentials, is the setup container's trust store in place of
	// Spec.CABundle: the proxy's authority, then that bundle or the
	// host's public roots.
	CABundle string

	d       *Driver
	netID   string
	proxyID string
	conn    io.Closer
	read    chan struct{} // closed when the proxy's output ends
	ca      string        // the proxy's authority, from its Ready event
	caDir   string        // holds CABundle

	mu  sync.Mutex
	got egress.Summary // what the proxy reported
}

// StartEgress creates the network and starts the proxy on it. The caller
// must Close it, which also says what the proxy reached and refused. The
// Egress is an
// *Egress.
func (d *Driver) StartEgress(ctx context.Context, spec sandbox.EgressSpec) (_ sandbox.Egress, err error) {
	if spec.TaskID == "" {
		return nil, errors.New("egress spec: TaskID is required")
	}
	suffix := make([]byte, 4)
	rand.Read(suffix)
	name := "agentbot-egress-" + hex.EncodeToString(suffix)
	labels := map[string]string{LabelTask: spec.TaskID, LabelWorker: d.opts.WorkerID, networkLabel: "true"}
	created, err := d.cli.NetworkCreate(ctx, name, network.CreateOptions{
		Driver: "bridge", Internal: true, Labels: labels,
		// Without an address of the host's on the bridge, a container on it
		// reaches neither the host's services nor anything routed beyond.
		Options: map[string]string{inhibitIPv4: "true"},
	})
	if err != nil {
		return nil, fmt.Errorf("create the setup network for task %s: %w", spec.TaskID, err)
	}
	e := &Egress{Network: name, d: d, netID: created.ID, read: make(chan struct{})}
	defer func() {
		if err != nil {
			if _, cerr := e.Close(ctx); cerr != nil {
				d.log.Warn("remove a setup network that failed to start", "task", spec.TaskID, "err", cerr)
			}
		}
	}()
	info, err := d.cli.NetworkInspect(ctx, created.ID, network.InspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect the setup network: %w", err)
	}
	var subnets []string
	for _, c := range info.IPAM.Config {
		subnets = append(subnets, c.Subnet)
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("setup network %s has no subnet", name)
	}
	if err := e.startProxy(ctx, spec, subnets, labels); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Egress) startProxy(ctx context.Context, spec sandbox.EgressSpec, subnets []string, labels map[string]string) error {
	d := e.d
	cmd := []string{executorPath, "egress-proxy", "--listen", fmt.Sprintf(":%d", proxyPort)}
	// Only the setup network's peers, not every container on the bridge.
	for _, s := range subnets {
		cmd = append(cmd, "--accept-from", s)
	}
	for _, a := range spec.Allow {
		cmd = append(cmd, "--allow", a)
	}
	for _, n := range spec.Internal {
		cmd = append(cmd, "--internal", n)
	}
	upstream, err := upstreamOf(spec)
	if err != nil {
		return err
	}
	if upstream != nil {
		cmd = append(cmd, "--upstream-stdin")
	}
	pids := int64(proxyPids)
	withInit := true
	created, err := d.cli.ContainerCreate(ctx, &container.Config{
		Image: d.opts.Image, User: fmt.Sprintf("%d:%d", sandbox.UID, sandbox.GID), Cmd: cmd,
		Env:    []string{"LANG=C.UTF-8"},
		Labels: labels, AttachStdout: true, AttachStderr: true,
		AttachStdin: upstream != nil, OpenStdin: upstream != nil, StdinOnce: upstream != nil,
	}, &container.HostConfig{
		NetworkMode:    "bridge",
		ReadonlyRootfs: true,
		Mounts:         []mount.Mount{{Type: mount.TypeBind, Source: d.opts.ExecutorPath, Target: executorPath, ReadOnly: true}},
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Init:           &withInit,
		Runtime:        d.opts.Runtime,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources:      container.Resources{NanoCPUs: 1e9, Memory: proxyMemory, MemorySwap: proxyMemory, PidsLimit: &pids},
	}, nil, nil, "")
	if err != nil {
		return fmt.Errorf("create the egress proxy for task %s: %w", spec.TaskID, err)
	}
	e.proxyID = created.ID
	if err := d.cli.NetworkConnect(ctx, e.netID, e.proxyID, nil); err != nil {
		return fmt.Errorf("attach the egress proxy to the setup network: %w", err)
	}
	conn, err := d.cli.ContainerAttach(ctx, e.proxyID, container.AttachOptions{Stream: true, Stdin: upstream != nil, Stdout: true, Stderr: true})
	if err != nil {
		return fmt.Errorf("attach to the egress proxy: %w", err)
	}
	e.conn = conn.Conn
	stderr := sandbox.NewCapture(4 << 10)
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, stderr, conn.Reader)
		pw.CloseWithError(err)
	}()
	ready := make(chan error, 1)
	go e.readEvents(pr, ready)
	if err := d.cli.ContainerStart(ctx, e.proxyID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start the egress proxy: %w", err)
	}
	// A proxy that stopped reading never gets ready: its stderr says why.
	var handErr error
	if upstream != nil {
		if _, handErr = conn.Conn.Write(upstream); handErr == nil {
			handErr = conn.CloseWrite()
		}
	}
	select {
	case err := <-ready:
		if err != nil {
			out, _ := stderr.Bytes()
			return fmt.Errorf("egress proxy did not start: %w (stderr: %q, handing it its upstream: %v)", err, out, handErr)
		}
	case <-time.After(proxyReady):
		return fmt.Errorf("egress proxy not ready after %s", proxyReady)
	case <-ctx.Done():
		return ctx.Err()
	}
	info, err := d.cli.ContainerInspect(ctx, e.proxyID)
	if err != nil {
		return fmt.Errorf("inspect the egress proxy: %w", err)
	}
	ep := info.NetworkSettings.Networks[e.Network]
	if ep == nil || ep.IPAddress == "" {
		return fmt.Errorf("egress proxy has no address on %s", e.Network)
	}
	e.ProxyURL = fmt.Sprintf("http://%s:%d", ep.IPAddress, proxyPort)
	return e.writeCABundle(spec.CABundle)
}

// upstreamOf is what the proxy reads on its stdin, or nil when no
// registry has credentials: the credentials, and spec.CABundle's
// certificates for the proxy's own connections to registries.
func upstreamOf(spec sandbox.EgressSpec) ([]byte, error) {
	if len(spec.Upstream.Credentials) == 0 {
		return nil, nil
	}
	up := spec.Upstream
	if spec.CABundle != "" {
		roots, err := os.ReadFile(spec.CABundle)
		if err != nil {
			return nil, fmt.Errorf("the setup CA bundle for the egress proxy: %w", err)
		}
		up.Roots = string(roots)
	}
	return json.Marshal(up)
}

// writeCABundle writes CABundle when the proxy intercepts: its authority
// followed by base's certificates, or the host's public roots.
func (e *Egress) writeCABundle(base string) error {
	if e.ca == "" {
		return nil
	}
	bundle := []byte(e.ca)
	if base != "" {
		b, err := os.ReadFile(base)
		if err != nil {
			return fmt.Errorf("the setup CA bundle: %w", err)
		}
		bundle = append(bundle, b...)
	} else {
		bundle = append(bundle, SystemRoots()...)
	}
	dir, err := os.MkdirTemp("", "agentbot-egress-")
	if err != nil {
		return fmt.Errorf("the setup CA bundle: %w", err)
	}
	e.caDir = dir
	path := filepath.Join(dir, "ca-bundle.pem")
	// Read by the sandbox user; the authority's key stays in the proxy.
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		return fmt.Errorf("the setup CA bundle: %w", err)
	}
	e.CABundle = path
	return nil
}

// readEvents keeps what the proxy reached and refused; the first event
// must be Ready.
func (e *Egress) readEvents(r io.Reader, ready chan<- error) {
	defer close(e.read)
	dec := json.NewDecoder(r)
	first := true
	for {
		var ev egress.Event
		if err := dec.Decode(&ev); err != nil {
			if first {
				ready <- fmt.Errorf("read its output: %w", err)
			}
			return
		}
		switch {
		case first && ev.Ready == "":
			ready <- fmt.Errorf("first output %+v is not ready", ev)
			return
		case first:
			e.ca = ev.CA
			ready <- nil
		case ev.Refused != nil:
			e.mu.Lock()
			e.got.Refused = append(e.got.Refused, *ev.Refused)
			e.mu.Unlock()
		case ev.Reached != nil:
			e.mu.Lock()
			e.got.Reached = append(e.got.Reached, *ev.Reached)
			e.mu.Unlock()
		}
		first = false
	}
}

// Env are the proxy variables of a container on the network, in the upper
// and lower case that different tools read.
func (e *Egress) Env() []string {
	var env []string
	for _, kv := range [][2]string{{"HTTP_PROXY", e.ProxyURL}, {"HTTPS_PROXY", e.ProxyURL}, {"NO_PROXY", "localhost,127.0.0.1,::1"}} {
		env = append(env, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
	}
	return env
}

// Close removes the proxy and the network, with a context that outlives
// ctx's cancellation, and returns the hosts the proxy reached and the
// connections it refused. Close the containers on the network first.
func (e *Egress) Close(ctx context.Context) (egress.Summary, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), engineTimeout)
	defer cancel()
	var errs []error
	if e.proxyID != "" {
		grace := int(stopGrace / time.Second)
		if err := e.d.cli.ContainerStop(ctx, e.proxyID, container.StopOptions{Timeout: &grace}); err != nil && !cerrdefs.IsNotFound(err) {
			e.d.log.Warn("stop the egress proxy", "err", err)
		}
		if e.conn != nil {
			// Its output has ended once it stopped: every event is read.
			select {
			case <-e.read:
			case <-ctx.Done():
			}
			e.conn.Close()
		}
		errs = append(errs, e.d.remove(ctx, e.proxyID))
	}
	if err := e.d.cli.NetworkRemove(ctx, e.netID); err != nil && !cerrdefs.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("remove setup network %s: %w", e.Network, err))
	}
	if e.caDir != "" {
		errs = append(errs, os.RemoveAll(e.caDir))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.got, errors.Join(errs...)
}

// removeOrphanNetworks removes the setup networks of dead workers; their
// containers are removed first by RemoveOrphans.
func (d *Driver) removeOrphanNetworks(ctx context.Context, alive func(ctx context.Context, workerID string) (bool, error)) error {
	list, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", networkLabel))})
	if err != nil {
		return fmt.Errorf("list setup networks: %w", err)
	}
	var errs []error
	for _, n := range list {
		live, err := alive(ctx, n.Labels[LabelWorker])
		if err != nil || live {
			continue
		}
		if err := d.cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove setup network %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}
