package egress

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
)

// registry serves 200 to requests whose Authorization is want, 401 to the
// others, and keeps every Authorization it was sent.
type registry struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newRegistry(t *testing.T, want string, cert *tls.Certificate) *registry {
	t.Helper()
	r := &registry{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Header.Get("Authorization"))
		r.mu.Unlock()
		if want == "" || req.Header.Get("Authorization") != want {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "package index")
	}))
	if cert != nil {
		r.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		r.StartTLS()
	} else {
		r.Start()
	}
	t.Cleanup(r.Close)
	return r
}

func (r *registry) authorizations() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func credentialFor(t *testing.T, rawURL, auth string) Credential {
	t.Helper()
	u, _ := url.Parse(rawURL)
	port, _ := strconv.Atoi(u.Port())
	return Credential{Scheme: u.Scheme, Host: u.Hostname(), Port: port, Authorization: auth}
}

// The proxy adds a registry's credentials to what it forwards to that
// registry, over plain HTTP and, by ending the client's TLS with its own
// authority, over HTTPS; a client's own Authorization is replaced, and
// another host, tunnelled as before, gets nothing.
func TestProxyAddsRegistryCredentials(t *testing.T) {
	t.Parallel()
	const secret = "Basic Y2k6czNjcmV0"
	upstreamCA, err := NewAuthority("registry CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := upstreamCA.Issue("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tlsReg, plainReg := newRegistry(t, secret, cert), newRegistry(t, secret, nil)
	other := newRegistry(t, "", cert)
	in, err := NewInjector(Upstream{
		Credentials: []Credential{credentialFor(t, tlsReg.URL, secret), credentialFor(t, plainReg.URL, secret)},
		Roots:       string(upstreamCA.CertPEM()),
	})
	if err != nil {
		t.Fatal(err)
	}
	allow := []app.AllowHost{allowOf(t, tlsReg.URL), allowOf(t, plainReg.URL), allowOf(t, other.URL)}
	client := startProxy(t, New(Config{Allow: allow, Inject: in}, &recorder{}, quiet), nil)
	// The client trusts the proxy's authority for the intercepted
	// registry, and the registry's own CA for the tunnelled host.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(in.CA()))
	roots.AppendCertsFromPEM(upstreamCA.CertPEM())
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: roots}

	for _, u := range []string{tlsReg.URL, plainReg.URL} {
		req, _ := http.NewRequest("GET", u+"/simple/", nil)
		req.Header.Set("Authorization", "Basic forged")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "package index" {
			t.Errorf("GET %s: %s %q; want the index, the proxy adding the credentials", u, resp.Status, body)
		}
	}
	resp, err := client.Get(other.URL + "/simple/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := other.authorizations(); len(got) != 1 || got[0] != "" {
		t.Errorf("the host without credentials was sent %q", got)
	}
	if got := tlsReg.authorizations(); len(got) != 1 || got[0] != secret {
		t.Errorf("the TLS registry was sent %q, want only the worker's credentials", got)
	}
}

// A registry's credentials go to its own scheme, host and port only:
// the same host on another port or over the other scheme gets none, and
// without credentials the registry answers 401.
func TestProxySendsCredentialsOnlyToTheirRegistry(t *testing.T) {
	t.Parallel()
	reg := newRegistry(t, "Bearer tok", nil)
	u, _ := url.Parse(reg.URL)
	port, _ := strconv.Atoi(u.Port())
	in, err := NewInjector(Upstream{Credentials: []Credential{
		{Scheme: "https", Host: "127.0.0.1", Port: port, Authorization: "Bearer tok"},
		{Scheme: "http", Host: "127.0.0.1", Port: port + 1, Authorization: "Bearer tok"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	client := startProxy(t, New(Config{Allow: []app.AllowHost{allowOf(t, reg.URL)}, Inject: in}, &recorder{}, quiet), nil)
	resp, err := client.Get(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || reg.authorizations()[0] != "" {
		t.Errorf("%s, sent %q; want 401 with no Authorization", resp.Status, reg.authorizations())
	}
}

func TestNewInjectorRefusesBadCredentials(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Credential{
		"no host":       {Scheme: "https", Port: 443, Authorization: "Bearer x"},
		"ftp":           {Scheme: "ftp", Host: "h", Port: 21, Authorization: "Bearer x"},
		"header split":  {Scheme: "https", Host: "h", Port: 443, Authorization: "Bearer x\r\nX-Evil: 1"},
		"no credential": {Scheme: "https", Host: "h", Port: 443},
	} {
		if _, err := NewInjector(Upstream{Credentials: []Credential{c}}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	in, err := NewInjector(Upstream{Credentials: []Credential{{Scheme: "http", Host: "h", Port: 80, Authorization: "Bearer x"}}})
	if err != nil || in.CA() != "" {
		t.Errorf("plain http credentials only: CA %q, %v; want none, nothing to intercept", in.CA(), err)
	}
}

// The authority's certificates are what TLS clients verify.
func TestAuthorityIssuesVerifiableCertificates(t *testing.T) {
	t.Parallel()
	a, err := NewAuthority("test")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(a.CertPEM())
	for _, host := range []string{"registry.example", "10.0.0.5"} {
		c, err := a.Issue(host)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(c.Certificate[0])
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, CurrentTime: time.Now()}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
}
