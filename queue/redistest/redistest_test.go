package redistest

import (
	"net"
	"testing"
)

func TestStartStopRestart(t *testing.T) {
	s := Start(t)
	ping := func() error {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 7)
		_, err = c.Read(buf)
		if err == nil && string(buf) != "+PONG\r\n" {
			t.Fatalf("PING answered %q", buf)
		}
		return err
	}
	if err := ping(); err != nil {
		t.Fatalf("ping a started server: %v", err)
	}
	s.Stop()
	if err := ping(); err == nil {
		t.Fatal("ping succeeded on a stopped server")
	}
	s.Restart()
	if err := ping(); err != nil {
		t.Fatalf("ping a restarted server: %v", err)
	}
}
