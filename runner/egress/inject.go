package egress

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Upstream is what the worker hands the proxy on its stdin, never in its
// arguments or environment, which the engine shows to whoever inspects
// the container: the private registries' credentials, and the CA
// certificates of the network they are reached on.
type Upstream struct {
	Credentials []Credential `json:"credentials"`
	// Roots are PEM certificates trusted besides the system's when the
	// proxy itself connects to a registry over TLS.
	Roots string `json:"roots,omitempty"`
}

// Credential is the Authorization the proxy adds to every request to one
// registry: Scheme ("http" or "https"), Host and Port, exactly.
type Credential struct {
	Scheme        string `json:"scheme"`
	Host          string `json:"host"`
	Port          int    `json:"port"`
	Authorization string `json:"authorization"`
}

// Injector adds registries' credentials to the requests setup sends them.
//
// Package managers reach an https registry through a CONNECT tunnel, in
// which the proxy sees only ciphertext, and none of go, pip and npm sends
// proxy credentials a registry could take on CONNECT. So for an https
// registry with credentials, and for no other host, the proxy ends the
// client's TLS itself, with a certificate for the registry's host signed
// by an authority it made at start (whose key never leaves the proxy and
// which the setup container trusts for that setup only), adds the
// Authorization and sends the request on over its own TLS connection,
// verified against the system's roots and Upstream.Roots. A plain http
// registry gets the header on the forwarded request.
type Injector struct {
	auth  map[string]string // scheme://host:port → Authorization
	ca    *Authority
	roots *x509.CertPool
}

// NewInjector checks up and makes the authority of intercepted registries.
func NewInjector(up Upstream) (*Injector, error) {
	in := &Injector{auth: map[string]string{}}
	for _, c := range up.Credentials {
		if (c.Scheme != "http" && c.Scheme != "https") || c.Host == "" || c.Port < 1 || c.Port > 65535 {
			return nil, fmt.Errorf("egress credentials for %s://%s:%d: not an http or https host and port", c.Scheme, c.Host, c.Port)
		}
		if c.Authorization == "" || strings.ContainsAny(c.Authorization, "\r\n") {
			return nil, fmt.Errorf("egress credentials for %s://%s:%d: not one header line", c.Scheme, c.Host, c.Port)
		}
		in.auth[credentialKey(c.Scheme, c.Host, c.Port)] = c.Authorization
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if up.Roots != "" && !roots.AppendCertsFromPEM([]byte(up.Roots)) {
		return nil, errors.New("egress upstream roots: no PEM certificate")
	}
	in.roots = roots
	if in.ca, err = NewAuthority("agentbot egress proxy"); err != nil {
		return nil, err
	}
	return in, nil
}

// CA is the PEM certificate setup must trust to reach intercepted
// registries, or "" when none is.
func (in *Injector) CA() string {
	if in == nil {
		return ""
	}
	for k := range in.auth {
		if strings.HasPrefix(k, "https://") {
			return string(in.ca.CertPEM())
		}
	}
	return ""
}

func credentialKey(scheme, host string, port int) string {
	return scheme + "://" + net.JoinHostPort(strings.ToLower(strings.TrimSuffix(host, ".")), strconv.Itoa(port))
}

// authorize sets the Authorization of the registry at scheme://host:port,
// if it has credentials, on h, in place of whatever the client sent.
func (in *Injector) authorize(h http.Header, scheme, host string, port int) {
	if in == nil {
		return
	}
	if a, ok := in.auth[credentialKey(scheme, host, port)]; ok {
		h.Set("Authorization", a)
	}
}

// intercepts reports whether the proxy ends the TLS of CONNECTs to
// host:port.
func (in *Injector) intercepts(host string, port int) bool {
	if in == nil {
		return false
	}
	_, ok := in.auth[credentialKey("https", host, port)]
	return ok
}

// ReadUpstream reads the Upstream the worker writes on the proxy's stdin
// (egress-proxy --upstream-stdin) and returns its injector.
func ReadUpstream(r io.Reader) (*Injector, error) {
	var up Upstream
	if err := json.NewDecoder(r).Decode(&up); err != nil {
		return nil, fmt.Errorf("read the egress proxy's upstream: %w", err)
	}
	return NewInjector(up)
}

// intercept answers a CONNECT to a registry with credentials: it ends the
// client's TLS and forwards each request in it to host:port with the
// registry's Authorization.
func (p *Proxy) intercept(w http.ResponseWriter, host string, port int) {
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "agentbot egress proxy: "+err.Error(), http.StatusInternalServerError)
		return
	}
	client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		client.Close()
		return
	}
	leaf, err := p.inject.ca.Issue(host)
	if err != nil {
		p.log.Warn("egress proxy: certificate for an intercepted registry", "host", host, "err", err)
		client.Close()
		return
	}
	conn := tls.Server(&bufferedConn{Conn: client, r: buf.Reader}, &tls.Config{
		Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12,
	})
	authority := net.JoinHostPort(host, strconv.Itoa(port))
	l := &oneConnListener{conn: conn, done: make(chan struct{})}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Whatever Host the client names, the request goes where the
			// CONNECT was allowed to, and only there with the credentials.
			r.URL.Scheme, r.URL.Host, r.Host = "https", authority, authority
			p.inject.authorize(r.Header, "https", host, port)
			p.fwd.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(p.log.Handler(), slog.LevelWarn),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				l.Close()
			}
		},
	}
	srv.Serve(l)
}

// bufferedConn reads first what the server buffered past the CONNECT.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// oneConnListener accepts one connection, then waits until it is closed.
type oneConnListener struct {
	mu   sync.Mutex
	conn net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }

// Authority is a certificate authority of the proxy's own, made at start.
type Authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewAuthority makes an authority named name, valid for a day.
func NewAuthority(name string) (*Authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress authority key: %w", err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("egress authority: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("egress authority: %w", err)
	}
	return &Authority{cert: cert, key: key}, nil
}

// CertPEM is the authority's certificate.
func (a *Authority) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.cert.Raw})
}

// Issue signs a server certificate for host, a name or an IP address.
func (a *Authority) Issue(host string) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: host},
		NotBefore: a.cert.NotBefore, NotAfter: a.cert.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}
