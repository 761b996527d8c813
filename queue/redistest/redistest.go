// Package redistest starts a private, throw-away redis-server for a test, so
// that tests in different packages never share keys and a test may stop and
// restart its server.
//
// Where redis-server is missing the test is skipped, except under CI=true,
// where a missing Redis is a failure.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server process owned by one test.
type Server struct {
	Addr string // host:port
	URL  string // redis://host:port/0

	t    testing.TB
	dir  string
	port int
	conf string // a redis.conf to start from, or ""
	// extra are arguments after the usual ones, and ready the log line
	// that says the server is up ("Ready to accept connections" when "").
	extra []string
	ready string
	cmd   *exec.Cmd
	// started is set once the server was up: its port is known to its
	// clients from then on.
	started bool
}

// Start launches a server on a free loopback port and stops it when the test
// ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWithConfig(t, "")
}

// StartWithConfig is Start with the settings of the redis.conf file conf
// (none when ""), the port, bind address and directory overridden.
func StartWithConfig(t testing.TB, conf string) *Server {
	t.Helper()
	s := newServer(t, conf)
	s.start(lookPath(t))
	t.Cleanup(s.Stop)
	return s
}

// lookPath finds redis-server, or skips (fails under CI) the test.
func lookPath(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed; CI requires it (apt-get install -y redis-server)")
		}
		t.Skip("redis-server is not installed (apt-get install -y redis-server)")
	}
	return bin
}

// newServer returns a Server, not started, on a free loopback port.
func newServer(t testing.TB, conf string) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), conf: conf}
	s.setPort(freePort(t))
	return s
}

func (s *Server) setPort(port int) {
	s.port = port
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.URL = "redis://" + s.Addr + "/0"
}

// Patient returns url, a Server's or a Sentinel deployment's, with
// read, write and pool timeouts of 5 s, which queue.Connect honours: for
// the workers of an end-to-end test and the test's own reads, which a
// two-core machine running the suite at a load of tens makes miss
// agentbot's 500 ms without anything being wrong. The intake's tests keep
// the plain URL: answering 503 at once when Redis is slow is what they
// test.
func Patient(url string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "read_timeout=5s&write_timeout=5s&pool_timeout=5s"
}

// handedOut are the ports freePort gave this process, never given twice.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a free loopback port below the kernel's ephemeral range.
// A port from that range (as port 0 gives) may be taken, while its server
// is stopped for a Restart, as the local end of any outgoing connection.
func freePort(t testing.TB) int {
	t.Helper()
	const low = 10000
	high := ephemeralStart()
	for range 1000 {
		port := low + rand.IntN(high-low)
		handedOut.Lock()
		taken := handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if taken {
			continue
		}
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free port in [%d, %d)", low, high)
	return 0
}

// ephemeralStart is the first port of the kernel's ephemeral range (32768
// when it cannot be read, or when it starts too low to leave room below).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 20000 {
		return 32768
	}
	return n
}

// start launches the server. Another process may take its port between
// freePort's check and the launch; the first launch then moves to another
// port, where a Restart must keep its own and fails.
func (s *Server) start(bin string) {
	s.t.Helper()
	for range 5 {
		err := s.launch(bin)
		if err == nil {
			return
		}
		if s.started || !errors.Is(err, errPortTaken) {
			s.t.Fatal(err)
		}
		s.setPort(freePort(s.t))
	}
	s.t.Fatalf("redis-server found no free port in 5 tries")
}

// errPortTaken is launch's error when redis-server could not bind its port.
var errPortTaken = errors.New("port taken")

// launch runs redis-server and waits until it is ready.
func (s *Server) launch(bin string) error {
	args := []string{"--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--dir", s.dir}
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	} else {
		args = append(args, "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction")
	}
	args = append(args, s.extra...)
	readyLine := s.ready
	if readyLine == "" {
		readyLine = "Ready to accept connections"
	}
	s.cmd = exec.Command(bin, args...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("redis-server stdout: %w", err)
	}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	// The log's last lines say why a server exited before it was ready.
	var tail []string
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			if !found {
				tail = append(tail[max(len(tail)-9, 0):], sc.Text())
			}
			if !found && strings.Contains(sc.Text(), readyLine) {
				found = true
				ready <- true
			}
		}
		if !found {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			_ = s.cmd.Wait()
			s.cmd = nil
			log := strings.Join(tail, "\n")
			if strings.Contains(log, "Address already in use") {
				return fmt.Errorf("redis-server on port %d: %w:\n%s", s.port, errPortTaken, log)
			}
			return fmt.Errorf("redis-server on port %d exited before it was ready:\n%s", s.port, log)
		}
	case <-time.After(10 * time.Second):
		s.Stop()
		return fmt.Errorf("redis-server on port %d not ready after 10s", s.port)
	}
	s.started = true
	return nil
}

// Stop kills the server. The port stays reserved for Restart.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the server again on the same port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start(lookPath(s.t))
}
