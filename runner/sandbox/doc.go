// Package sandbox is the contract between the runner and what runs its
// containers, and the protocol between the host and the executor inside
// one. The contract (box.go): Sandboxes starts a Box for a Spec, with the
// Overlays of a prepared environment and, for setup, an Egress. The
// protocol: a Cmd, its Result, the Answer that carries it on the wire, and
// Serve, the executor itself ("agentbot sandbox-exec"). It links no Docker:
// the runner, the environment cache, the tools and the loop speak it
// without knowing what runs the container. The Docker driver that
// implements it is runner/sandbox/docker.
//
// The wire format is one JSON Cmd per line on the executor's stdin and one
// JSON Answer per line on its stdout, one command at a time.
//
// While a command runs, the executor bounds the work tree's size: it
// measures the disk the tree takes every few tens of milliseconds and
// kills the command with every process it started once the tree is more
// than Cmd.MaxTreeGrowth past its size when the executor started (or when
// the command started, if that is more); the Result then says TreeFull.
// The limit on each file is the container's RLIMIT_FSIZE; this one bounds
// them all, on storage drivers with no size limit of their own and on a
// work tree that is a bind mount of the host's disk.
//
// The constants below are the contract with the sandbox image
// (deploy/sandbox): the user commands run as and where the work tree is.
package sandbox

// The user commands run as: not root, and not the uid of the worker (which
// owns the host side). The work tree must be writable by it; the image names
// it "sandbox" with its home at Home.
const (
	UID  = 65532
	GID  = 65532
	Home = "/home/sandbox"
	// WorkDir is where the work tree is mounted inside the container.
	WorkDir = "/workspace"
)
