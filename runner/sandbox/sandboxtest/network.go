package sandboxtest

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentbot/agentbot/runner/egress"
)

// GitServer is a dumb-protocol git server on every host address, standing
// for a registry a setup downloads from, that counts the requests it
// answers.
type GitServer struct {
	// Port is the port it listens on, as text for URLs.
	Port string
	// Requests counts every request it answered, found or not.
	Requests atomic.Int64
}

// StartGitServer starts a GitServer that is closed when the test ends. With
// a certificate it serves HTTPS, else plain HTTP.
func StartGitServer(t testing.TB, cert ...tls.Certificate) *GitServer {
	t.Helper()
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatalf("listen for the git server: %v", err)
	}
	g := &GitServer{Port: fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.Requests.Add(1)
		switch {
		case strings.HasSuffix(r.URL.Path, "/info/refs"):
			fmt.Fprintf(w, "%s\trefs/heads/main\n", strings.Repeat("ab", 20))
		case strings.HasSuffix(r.URL.Path, "/HEAD"):
			fmt.Fprintln(w, "ref: refs/heads/main")
		default:
			http.NotFound(w, r)
		}
	})}
	if len(cert) > 0 {
		srv.TLSConfig = &tls.Config{Certificates: cert}
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	t.Cleanup(func() { srv.Close() })
	return g
}

// BridgeGateway is the host's address on Docker's default bridge, where a
// sandbox's egress proxy reaches servers on the host.
func BridgeGateway(t testing.TB) string {
	t.Helper()
	RequireDocker(t)
	out, err := exec.Command("docker", "network", "inspect", "bridge", "-f", `{{index .Options "com.docker.network.bridge.name"}}`).Output()
	if err != nil {
		t.Fatalf("docker network inspect bridge: %v", err)
	}
	bridge, err := net.InterfaceByName(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("the bridge network's interface %q: %v", out, err)
	}
	addrs, err := bridge.Addrs()
	if err != nil || len(addrs) == 0 {
		t.Fatalf("the bridge %s has no address (%v)", bridge.Name, err)
	}
	return addrs[0].(*net.IPNet).IP.String()
}

// PKI is a CA, as PEM, and a server certificate it signed for ip: a
// registry behind TLS that only a CA bundle holding the CA trusts.
func PKI(t testing.TB, ip string) (caPEM []byte, cert tls.Certificate) {
	t.Helper()
	ca, err := egress.NewAuthority("re-signing egress CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(ip)
	if err != nil {
		t.Fatal(err)
	}
	return ca.CertPEM(), *leaf
}
