package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// sweepTimeout bounds how long the executor waits for the processes it
// killed to be gone (reaped by the container's init). Past it the container
// can no longer be trusted to be clean, and the executor gives up.
const sweepTimeout = 30 * time.Second

// containment is what Serve needs to keep commands apart from itself.
type containment struct {
	user *syscall.Credential // commands run as this user
	self int
}

// contain checks that the executor runs where Contain is meant for, and
// makes it non-dumpable: even a process of its own uid could then not open
// its /proc entries (fd, mem), and a core dump would not write its memory.
func contain() (*containment, error) {
	if os.Getuid() != 0 {
		return nil, fmt.Errorf("the executor runs as uid %d, not as the container's root: it could not run commands as another user", os.Getuid())
	}
	// Killing every process but init and itself is right only in the
	// container's own pid namespace, whose init (pid 1) started it.
	if os.Getppid() != 1 {
		return nil, fmt.Errorf("the executor's parent is pid %d, not the container's init", os.Getppid())
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return nil, fmt.Errorf("make the executor non-dumpable: %w", errno)
	}
	return &containment{user: &syscall.Credential{Uid: UID, Gid: GID}, self: os.Getpid()}, nil
}

// killAll sends SIGKILL to every process the executor may signal but
// itself and the init: every process of the container's commands. The
// kernel delivers it under the task list lock, so a fork bomb cannot add
// a process the signal misses.
func (j *containment) killAll() error {
	if err := syscall.Kill(-1, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill the command's processes: %w", err)
	}
	return nil
}

// sweep kills every process but the init and the executor and waits until
// the init has reaped them all, so that the next command starts with every
// pid of the container's limit free.
func (j *containment) sweep(ctx context.Context) error {
	deadline := time.Now().Add(sweepTimeout)
	for {
		if err := j.killAll(); err != nil {
			return err
		}
		left, err := j.others()
		if err != nil {
			return err
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes outlived their command by %s", left, sweepTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// others counts the processes of the container other than the init and the
// executor, zombies not yet reaped included.
func (j *containment) others() (int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("list processes: %w", err)
	}
	n := 0
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err == nil && pid != 1 && pid != j.self {
			n++
		}
	}
	return n, nil
}
