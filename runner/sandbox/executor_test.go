package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCapture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		limit   int
		writes  []string
		want    string
		dropped int64
	}{
		{"fits", 8, []string{"abc", "de"}, "abcde", 0},
		{"exactly full", 4, []string{"ab", "cd"}, "abcd", 0},
		{"head and tail", 4, []string{"abcdefgh"}, "abgh", 4},
		{"tail wraps across writes", 6, []string{"abc", "def", "gh", "ij"}, "abchij", 4},
		{"small writes", 4, []string{"a", "b", "c", "d", "e", "f", "g"}, "abfg", 3},
		{"odd limit keeps the larger tail", 5, []string{"0123456789"}, "01789", 5},
		{"nothing written", 4, nil, "", 0},
		{"zero limit drops all", 0, []string{"abc"}, "", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCapture(tt.limit)
			for _, w := range tt.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			got, dropped := c.Bytes()
			if string(got) != tt.want || dropped != tt.dropped {
				t.Errorf("Bytes() = %q, %d; want %q, %d", got, dropped, tt.want, tt.dropped)
			}
		})
	}
}

// serve runs requests through Serve in a temporary work tree and returns the
// answers.
func serve(t *testing.T, root string, oom func() (int64, bool), reqs ...string) []Answer {
	t.Helper()
	var out bytes.Buffer
	in := strings.NewReader(strings.Join(reqs, "\n") + "\n")
	err := Serve(context.Background(), in, &out, ExecOptions{Root: root, Env: []string{"PATH=" + os.Getenv("PATH"), "BASE=base"}, OOMCounter: oom})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var answers []Answer
	dec := json.NewDecoder(&out)
	for {
		var a Answer
		if err := dec.Decode(&a); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(reqs) {
		t.Fatalf("got %d answers for %d requests", len(answers), len(reqs))
	}
	return answers
}

func req(t *testing.T, c Cmd) string {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServeRunsCommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		cmd        Cmd
		wantExit   int
		wantStdout string
		wantStderr string
	}{
		{"argv", Cmd{Argv: []string{"echo", "hi"}}, 0, "hi\n", ""},
		{"shell with exit code", Cmd{Shell: "echo out; echo err >&2; exit 3"}, 3, "out\n", "err\n"},
		{"stdin", Cmd{Argv: []string{"cat"}, Stdin: []byte("from stdin")}, 0, "from stdin", ""},
		{"env is the base plus the command's", Cmd{Shell: "echo $BASE $EXTRA", Env: []string{"EXTRA=extra"}}, 0, "base extra\n", ""},
		{"dir inside the tree", Cmd{Shell: "pwd", Dir: "sub"}, 0, filepath.Join(root, "sub") + "\n", ""},
		{"default dir is the tree", Cmd{Argv: []string{"pwd"}}, 0, root + "\n", ""},
		{"missing program is 127", Cmd{Argv: []string{"no-such-program-x"}}, 127, "", "no-such-program-x: exec: \"no-such-program-x\": executable file not found in $PATH\n"},
		{"output capped", Cmd{Shell: "printf 0123456789", OutputLimit: 4}, 0, "0189", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := serve(t, root, nil, req(t, tt.cmd))[0]
			if a.Error != "" {
				t.Fatalf("error: %s", a.Error)
			}
			if a.ExitCode != tt.wantExit || string(a.Stdout) != tt.wantStdout || string(a.Stderr) != tt.wantStderr {
				t.Errorf("got exit %d stdout %q stderr %q; want %d %q %q", a.ExitCode, a.Stdout, a.Stderr, tt.wantExit, tt.wantStdout, tt.wantStderr)
			}
			if a.TimedOut || a.OOMKilled {
				t.Errorf("timed out %v, oom %v", a.TimedOut, a.OOMKilled)
			}
		})
	}
}

// Bad requests are answered with a reason, and the executor goes on serving.
func TestServeRefusesBadRequests(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Symlink("/etc", filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, req, wantErr string
	}{
		{"not json", `{"argv": [`, "decode request"},
		{"empty", `{}`, "no argv and no shell line"},
		{"both argv and shell", req(t, Cmd{Argv: []string{"true"}, Shell: "true"}), "both argv and shell"},
		{"absolute dir", req(t, Cmd{Argv: []string{"pwd"}, Dir: "/etc"}), "not inside the work tree"},
		{"dot-dot dir", req(t, Cmd{Argv: []string{"pwd"}, Dir: "../.."}), "not inside the work tree"},
		{"symlink out", req(t, Cmd{Argv: []string{"pwd"}, Dir: "out"}), "leads out of the work tree"},
		{"missing dir", req(t, Cmd{Argv: []string{"pwd"}, Dir: "nope"}), "no such file"},
		{"file as dir", req(t, Cmd{Argv: []string{"pwd"}, Dir: "file"}), "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok := req(t, Cmd{Argv: []string{"echo", "still serving"}})
			answers := serve(t, root, nil, tt.req, ok)
			if !strings.Contains(answers[0].Error, tt.wantErr) || !strings.Contains(answers[0].Error, ErrInvalidCmd.Error()) {
				t.Errorf("error = %q, want it to say %q", answers[0].Error, tt.wantErr)
			}
			if string(answers[1].Stdout) != "still serving\n" {
				t.Errorf("next request answered %+v", answers[1])
			}
		})
	}
}

func TestServeTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	marker := filepath.Join(root, "survived")
	// A background child would write the marker after the timeout if it
	// outlived the shell.
	cmd := Cmd{Shell: "(sleep 2; touch " + marker + ") & while :; do :; done", Timeout: 300 * time.Millisecond}
	a := serve(t, root, nil, req(t, cmd))[0]
	if !a.TimedOut || a.ExitCode != 128+9 {
		t.Fatalf("got %+v, want timed out by SIGKILL", a.Result)
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a process of the timed-out command's group survived it")
	}
}

func TestServeLeftoverBackgroundProcessIsKilled(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	marker := filepath.Join(root, "survived")
	a := serve(t, root, nil, req(t, Cmd{Shell: "(sleep 1; touch " + marker + ") >/dev/null 2>&1 &"}))[0]
	if a.ExitCode != 0 {
		t.Fatalf("got %+v", a.Result)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a background process outlived its command")
	}
}

func TestServeReportsOOMKill(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// The kernel's counter moves while the first command runs, and not
	// during the second: both die by SIGKILL, only the first for memory.
	reads := 0
	oom := func() (int64, bool) {
		reads++
		if reads >= 2 {
			return 1, true
		}
		return 0, true
	}
	cmd := req(t, Cmd{Shell: "kill -9 $$"})
	for i, a := range serve(t, root, oom, cmd, cmd) {
		if want := i == 0; a.ExitCode != 137 || a.OOMKilled != want {
			t.Errorf("command %d: exit %d oom %v; want 137 oom %v", i, a.ExitCode, a.OOMKilled, want)
		}
	}
}

// events records, in order, the answers written and the reads of the OOM
// counter, so a test can tell which came first.
type events struct {
	log     []string
	answers bytes.Buffer
}

func (e *events) Write(p []byte) (int, error) {
	e.log = append(e.log, "answer")
	return e.answers.Write(p)
}

func TestServeReadsOOMCounterOnlyToExplainAFailure(t *testing.T) {
	t.Parallel()
	var ev events
	count := int64(0)
	oom := func() (int64, bool) {
		ev.log = append(ev.log, "count")
		// The kernel kills a process of the first command, which succeeds
		// all the same; from then on the count stays.
		if len(ev.log) > 1 {
			count = 1
		}
		return count, true
	}
	in := strings.NewReader(req(t, Cmd{Argv: []string{"true"}}) + "\n" + req(t, Cmd{Shell: "kill -9 $$"}) + "\n")
	if err := Serve(context.Background(), in, &ev, ExecOptions{Root: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}, OOMCounter: oom}); err != nil {
		t.Fatal(err)
	}
	// At the start; none before the answer of a command that succeeded,
	// one after it; one to explain the failure before its answer.
	want := []string{"count", "answer", "count", "count", "answer", "count"}
	if !slices.Equal(ev.log, want) {
		t.Errorf("order %v, want %v", ev.log, want)
	}
	// The second command died by a plain SIGKILL: the kill the count shows
	// happened while the first ran.
	dec := json.NewDecoder(&ev.answers)
	for i := range 2 {
		var a Answer
		if err := dec.Decode(&a); err != nil {
			t.Fatal(err)
		}
		if a.OOMKilled || a.ExitCode != []int{0, 137}[i] {
			t.Errorf("command %d: exit %d, oom %v", i, a.ExitCode, a.OOMKilled)
		}
	}
}

func TestServeStopsWithContext(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, pr, io.Discard, ExecOptions{Root: root}) }()
	if _, err := pw.Write([]byte(req(t, Cmd{Argv: []string{"sleep", "60"}}) + "\n")); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
}

func TestOOMKillLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          int64
		ok            bool
	}{
		{"cgroup v1 oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3, true},
		{"cgroup v2 memory.events", "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\noom_group_kill 0\n", 2, true},
		{"old kernel without the line", "oom_kill_disable 0\nunder_oom 0\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(f, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if n, ok := oomKillLine(f); n != tt.want || ok != tt.ok {
				t.Errorf("oomKillLine = %d, %v; want %d, %v", n, ok, tt.want, tt.ok)
			}
		})
	}
	if _, ok := oomKillLine(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file reads as a count")
	}
}

// Outside a container's pid namespace, as the child of anything but its
// init, containment is refused before it could kill a process.
func TestContainRefusedOutsideAContainer(t *testing.T) {
	t.Parallel()
	if os.Getppid() == 1 {
		t.Skip("the test process is a child of pid 1")
	}
	_, err := contain()
	if err == nil {
		t.Fatal("contain accepted a process that is not the container's executor")
	}
	if !strings.Contains(err.Error(), "not the container's init") && !strings.Contains(err.Error(), "not as the container's root") {
		t.Errorf("error %q does not say why", err)
	}
}
