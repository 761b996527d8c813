package docker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// forgery is an answer line a command would like the host to read as its
// own: success, with output of its choosing.
const forgery = `{"exit_code":0,"stdout":"Zm9yZ2Vk","duration":1}`

// A command attacks the executor by every way a process of the container
// could reach it: writing a forged answer into its stdout (and stdin and
// stderr, and those of the container's init, which hold the same pipes)
// through /proc, reading its memory, and signalling it. Every attempt
// fails, and the host reads the command's true result, then the next
// command's.
func TestCommandCannotForgeItsResult(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{})
	attack := `ex=$PPID
echo "executor $ex"
for p in $ex 1; do
	for fd in 0 1 2; do
		printf '%s\n' '` + forgery + `' > /proc/$p/fd/$fd && echo "BROKEN: wrote /proc/$p/fd/$fd"
	done
	head -c 64 /proc/$p/mem >/dev/null && echo "BROKEN: read /proc/$p/mem"
	head -c 64 /proc/$p/environ >/dev/null && echo "BROKEN: read /proc/$p/environ"
	for sig in 0 STOP TERM KILL; do
		kill -s $sig $p && echo "BROKEN: sent $sig to $p"
	done
done
# A daemon tries again once the answer is on its way.
setsid sh -c 'sleep 0.2; printf "%s\n" '"'` + forgery + `'"' > /proc/'$ex'/fd/1' </dev/null >/dev/null 2>&1 &
exit 3
`
	res := shell(t, c, attack)
	if res.ExitCode != 3 {
		t.Errorf("the attack's result: exit %d, want its own 3 (stdout %q)", res.ExitCode, res.Stdout)
	}
	if strings.Contains(string(res.Stdout), "BROKEN") || !strings.HasPrefix(string(res.Stdout), "executor ") {
		t.Errorf("the command reached the executor:\n%s", res.Stdout)
	}
	// Every attempt was refused by the kernel, and said so.
	if n := strings.Count(string(res.Stderr), "ermission denied") + strings.Count(string(res.Stderr), "not permitted"); n < 2*(3+2+4) {
		t.Errorf("%d refusals, want one per attempt (%d):\n%s", n, 2*(3+2+4), res.Stderr)
	}
	// The executor still answers, and with the next command's own result.
	time.Sleep(500 * time.Millisecond) // past the daemon's delay, had it survived
	for i := range 3 {
		res := shell(t, c, "echo next; exit 5")
		if res.ExitCode != 5 || string(res.Stdout) != "next\n" {
			t.Fatalf("command %d after the attack: exit %d stdout %q, want 5 %q", i, res.ExitCode, res.Stdout, "next\n")
		}
	}
}

// No process a command starts outlives it: not a background job, not a
// setsid daemon, not a double-forked one that closed its output.
func TestNothingOutlivesItsCommand(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{})
	res := shell(t, c, `sleep 1000 &
setsid sleep 1001 </dev/null >/dev/null 2>&1 &
(setsid sh -c 'sleep 1002 </dev/null >/dev/null 2>&1 & echo $! > /tmp/daemon') </dev/null >/dev/null 2>&1
nohup sleep 1003 </dev/null >/dev/null 2>&1 &
while [ ! -s /tmp/daemon ]; do sleep 0.01; done
# A background job is a forked shell until it has exec'd its sleep.
for i in $(seq 1000); do
  n=$(ps -eo args --no-headers | grep -c '^sleep 100')
  [ "$n" = 4 ] && break
  sleep 0.01
done
echo "$n"`)
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "4" {
		t.Fatalf("start the daemons: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	res = shell(t, c, "ps -eo pid,user,args --no-headers")
	if strings.Contains(string(res.Stdout), "sleep") {
		t.Errorf("processes outlived their command:\n%s", res.Stdout)
	}
	if res := shell(t, c, "kill -0 $(cat /tmp/daemon) 2>/dev/null && echo alive"); strings.Contains(string(res.Stdout), "alive") {
		t.Error("the double-forked daemon is alive")
	}
}

// Commands run as the sandbox user even though the executor is root.
func TestCommandsRunAsTheSandboxUser(t *testing.T) {
	t.Parallel()
	d := sandboxtest.NewDriver(t)
	c := sandboxtest.Start(t, d, sandbox.Spec{})
	res := shell(t, c, "id -u; id -g; id -G; ps -o user= -p $PPID")
	want := "65532\n65532\n65532\nroot\n"
	if string(res.Stdout) != want {
		t.Errorf("identity %q, want %q (stderr %q)", res.Stdout, want, res.Stderr)
	}
	// What commands write in the work tree belongs to the sandbox user.
	res = sandboxtest.MustRun(t, c, sandbox.Cmd{Shell: "touch made && stat -c %u:%g made", Timeout: time.Minute})
	if strings.TrimSpace(string(res.Stdout)) != "65532:65532" {
		t.Errorf("a file made by a command belongs to %q", res.Stdout)
	}
}
