package reach_test

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/sandbox/reach"
)

func TestProbeWritesWhatAnswered(t *testing.T) {
	t.Parallel()
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	// A proxy that tunnels only to the open listener, as the egress proxy
	// tunnels only to what it allows.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect && r.Host == open.Addr().String() {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "refused", http.StatusForbidden)
	}))
	defer proxy.Close()
	var out bytes.Buffer
	targets := []string{"tcp:" + open.Addr().String(), "tcp:" + closedAddr, "dns:" + closedAddr}
	if err := reach.Probe(t.Context(), &out, targets, proxy.URL, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	want := "tcp:" + open.Addr().String() + "\n" + "tcp:" + open.Addr().String() + reach.ViaProxy + "\n"
	if out.String() != want {
		t.Errorf("probe wrote %q; want %q", out.String(), want)
	}
	for _, bad := range []string{"udp:127.0.0.1:53", "127.0.0.1:53"} {
		if err := reach.Probe(t.Context(), &out, []string{bad}, "", time.Second); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("target %q: %v", bad, err)
		}
	}
}
