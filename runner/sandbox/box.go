package sandbox

import (
	"context"

	"github.com/agentbot/agentbot/runner/egress"
)

// Sandboxes starts the containers a task runs in: setup's, the agent's and
// the verification's. The runner, the environment cache and the evaluation
// are written against it and link no container engine; the Docker driver
// (runner/sandbox/docker) implements it, and so does the host sandbox of
// the tests (runner/sandbox/sandboxtest).
type Sandboxes interface {
	Start(ctx context.Context, spec Spec) (Box, error)
	// StartEgress starts the proxy through which setup reaches its
	// allowed hosts. The Egress it returns is only good in a Spec given
	// to the same Sandboxes.
	StartEgress(ctx context.Context, spec EgressSpec) (Egress, error)
	// ImageID is the id of the image ref names, and Image the image a
	// policy that names none runs in.
	ImageID(ctx context.Context, ref string) (string, error)
	Image() string
}

// Box is one started sandbox with its executor attached.
type Box interface {
	Run(ctx context.Context, cmd Cmd) (Result, error)
	// Close stops and removes the sandbox, with a context that outlives
	// ctx's cancellation.
	Close(ctx context.Context) error
	// Name is the container's id, which a verification names.
	Name() string
}

// Egress is a setup phase's only way out: a network whose only exit is the
// egress proxy. A Spec with Egress set joins it.
type Egress interface {
	// Env are the proxy variables of a sandbox on the network.
	Env() []string
	// Close removes the proxy and the network, with a context that
	// outlives ctx's cancellation, and returns the hosts the proxy reached
	// and the connections it refused. Close the sandboxes on the network
	// first.
	Close(ctx context.Context) (egress.Summary, error)
}

// Spec is one sandbox for one task. Zero limits take the driver's defaults
// (for Docker, docker.DefaultCPUs and its neighbours).
type Spec struct {
	TaskID    string
	WorkTree  string  // host directory mounted read-write at WorkDir; UID must be able to write it
	CPUs      float64 // cores
	Memory    int64   // bytes, memory and memory+swap
	Pids      int64
	TmpfsSize int64 // bytes for each of /tmp and $HOME
	// MaxFileSize is the largest file any process may write, in bytes.
	MaxFileSize int64
	// MaxTreeGrowth is how many bytes of disk a command may add to the
	// work tree, the overlays' upper directories and Home together before
	// the executor kills it (Cmd.MaxTreeGrowth), for every command that
	// sets none; DefaultMaxTreeGrowth when zero. RLIMIT_FSIZE bounds one
	// file; this bounds them all.
	MaxTreeGrowth int64
	// Network gives the sandbox the host's network, which reaches
	// wherever the host does. Only the setup phase may ask for network,
	// and the runner gives it an Egress instead; the agent phase always
	// runs in a fresh sandbox without.
	Network bool
	// Egress puts the sandbox on a setup network, whose only way out is
	// the egress proxy, with the proxy variables set; Network is then
	// ignored.
	Egress Egress
	// CABundle is a host file of PEM certificates the sandbox's TLS
	// clients trust instead of the image's own (SSL_CERT_FILE and the
	// variables of node, pip, requests, curl and git): the operator's CA,
	// for networks whose egress re-signs TLS, with the public roots.
	CABundle string
	Env      []string // KEY=VALUE added to the sandbox's minimal environment
	// Image is the sandbox's image; the driver's own when empty.
	Image string
	// Home, when set, is a host directory mounted read-write at Home
	// instead of the tmpfs: what the setup phase writes there is kept.
	// Only the setup phase may ask for it.
	Home string
	// Overlays are copy-on-write views of host directories: the sandbox
	// writes into each one's Upper, never into its Lower. One whose Target
	// is in the work tree where the tree has a file or a non-empty
	// directory is left out: it would hide the tree's own.
	Overlays []Overlay
}

// Overlay is a copy-on-write mount: Target shows Lower, and what the
// sandbox writes goes to Upper (Work is overlayfs' scratch directory, on
// Upper's filesystem). Upper and Work are the sandbox's own; no two
// sandboxes may share them. The engine mounts it, so the sandbox needs no
// privilege for it.
type Overlay struct {
	Target string // absolute path in the sandbox
	Lower  string // host directories, read only
	Upper  string
	Work   string
}

// EgressSpec is the network of one setup phase.
type EgressSpec struct {
	TaskID string
	// Allow are the setup.allow_hosts entries, already validated
	// (app.ParseAllowHost), the proxy connects to.
	Allow []string
	// Upstream holds the private registries' credentials, handed to the
	// proxy on its stdin: neither the engine's view of the proxy nor
	// anything on the setup network holds them.
	Upstream egress.Upstream
	// CABundle is the setup sandbox's Spec.CABundle, if any: the proxy
	// trusts it too when it connects to a registry itself.
	CABundle string
	// Internal are the setup.internal_ranges (CIDR) no allowed name may
	// lead to.
	Internal []string
}
