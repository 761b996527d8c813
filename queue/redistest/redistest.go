// Package redistest starts a private, throw-away redis-server for a test, so
// that tests in different packages never share keys and a test may stop and
// restart its server.
//
// Where redis-server is missing the test is skipped, except under CI=true,
// where a missing Redis is a failure.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &Server{
		Addr: fmt.Sprintf("127.0.0.1:%d", port),
		t:    t,
		dir:  t.TempDir(),
		port: port,
		conf: conf,
	}
	s.URL = "redis://" + s.Addr + "/0"
	return s
}

func (s *Server) start(bin string) {
	s.t.Helper()
	args := []string{"--port", fmt.Sprint(s.port), "--bind", "127.0.0.1", "--dir", s.dir}
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	} else {
		// A replica syncs at once, where Redis waits 5 s for more replicas
		// to share a diskless sync.
		args = append(args, "--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction",
			"--repl-diskless-sync-delay", "0")
	}
	args = append(args, s.extra...)
	readyLine := s.ready
	if readyLine == "" {
		readyLine = "Ready to accept connections"
	}
	s.cmd = exec.Command(bin, args...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		s.t.Fatalf("redis-server stdout: %v", err)
	}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
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
			s.t.Fatalf("redis-server on port %d exited before it was ready", s.port)
		}
	case <-time.After(10 * time.Second):
		s.t.Fatalf("redis-server on port %d not ready after 10s", s.port)
	}
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
