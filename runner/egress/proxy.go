// Package egress is the forward proxy through which the setup phase
// reaches the network: it connects only to the hosts of the server
// config's setup.allow_hosts, never to a link-local (cloud metadata)
// address, never through a name to an internal address (loopback,
// private, CGNAT, a cluster's ranges: app.IsInternalAddr) unless
// setup.allow_hosts names that address or its network, and records every
// connection it refuses.
//
// The proxy speaks plain HTTP forwarding and HTTPS CONNECT tunnels, as the
// HTTP_PROXY and HTTPS_PROXY variables of go, pip, npm, git and curl
// expect; it is built on the standard library's net/http and
// net/http/httputil. It runs as "agentbot egress-proxy" in a container of
// its own (runner/sandbox/docker starts it), attached to the setup
// container's internal network, which routes nowhere else, so a command
// that ignores the proxy variables reaches nothing.
//
// What the proxy decides is reported as one JSON Event per line on its
// stdout: first Ready, then one Refused per refused connection and one
// Reached per host it connected setup to, so that an operator sees both
// what setup needed and what it was denied.
package egress

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbot/agentbot/app"
)

// Reasons a connection is refused.
const (
	ReasonNotAllowed = "not in setup.allow_hosts"
	ReasonMetadata   = "a link-local (cloud metadata) address, never reachable"
	ReasonInternal   = "resolves to an internal address, which setup.allow_hosts must name as an address or network"
)

// MaxHost is the longest host a refusal keeps, DNS's longest name: what
// setup asked for beyond it goes no further than the proxy, so that no
// command can fill the trace, the audit log or the worker's log with it.
const MaxHost = 253

// Timeouts of the proxy's own connections.
const (
	dialTimeout       = 15 * time.Second
	readHeaderTimeout = 30 * time.Second
)

// Refusal is one connection the proxy refused.
type Refusal struct {
	Host   string    `json:"host"`
	Port   int       `json:"port"`
	Time   time.Time `json:"time"`
	Reason string    `json:"reason"`
}

// String is the refusal as the trace and the status comment say it.
func (r Refusal) String() string {
	return fmt.Sprintf("setup tried to reach %s — %s", net.JoinHostPort(r.Host, strconv.Itoa(r.Port)), r.Reason)
}

// Reach is a host and port the proxy connected setup to: a host setup
// needed, and was allowed.
type Reach struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

// String is the host:port.
func (r Reach) String() string { return net.JoinHostPort(r.Host, strconv.Itoa(r.Port)) }

// Event is one line of the proxy's output.
type Event struct {
	Ready   string   `json:"ready,omitempty"` // the address it listens on
	CA      string   `json:"ca,omitempty"`    // with Ready: Injector.CA
	Refused *Refusal `json:"refused,omitempty"`
	Reached *Reach   `json:"reached,omitempty"`
}

// Summary is what a proxy reported over its life: each host it connected
// setup to and each connection it refused, once.
type Summary struct {
	Reached []Reach
	Refused []Refusal
}

// Observer is told what the proxy decides, from its connections'
// goroutines at once.
type Observer interface {
	// Refused is a connection the proxy refused.
	Refused(Refusal)
	// Reached is a host the proxy connected setup to: a tunnel opened, or
	// a forwarded request answered.
	Reached(Reach)
}

// Config is what the proxy lets through.
type Config struct {
	// Allow are the setup.allow_hosts entries: the hosts, addresses and
	// networks connections may go to.
	Allow []app.AllowHost
	// Internal are more networks no name may lead to (setup.internal_ranges:
	// a cluster's service range), besides app.IsInternalAddr's own.
	Internal []netip.Prefix
	// Inject, when set, adds private registries' credentials to their
	// requests (nil: no registry has credentials).
	Inject *Injector
}

// Proxy is the forward proxy's handler.
type Proxy struct {
	cfg    Config
	obs    Observer
	dialer *net.Dialer
	fwd    *httputil.ReverseProxy
	log    *slog.Logger
	now    func() time.Time
	inject *Injector // nil: no registry has credentials
}

// addrRefused is what the dialer's Control returns for an address the
// proxy never connects to, with the refusal's reason.
type addrRefused struct{ reason string }

func (e *addrRefused) Error() string { return e.reason }

// New returns a proxy that connects only where cfg allows and tells obs
// every connection it refuses or makes.
func New(cfg Config, obs Observer, log *slog.Logger) *Proxy {
	p := &Proxy{cfg: cfg, obs: obs, log: log, now: time.Now, inject: cfg.Inject}
	// The check runs on the address actually dialled, after name
	// resolution, so no DNS name, whatever it resolves to at that moment,
	// leads to the metadata address or an internal one.
	p.dialer = &net.Dialer{Timeout: dialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: %w", address, err)
		}
		return p.dialable(ap)
	}}
	transport := &http.Transport{
		Proxy:                 nil, // never chain to the worker's own proxy
		DialContext:           p.dialer.DialContext,
		TLSHandshakeTimeout:   dialTimeout,
		ResponseHeaderTimeout: 5 * time.Minute,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       30 * time.Second,
	}
	p.fwd = &httputil.ReverseProxy{
		// The request already names its destination (absolute-form); the
		// hop-by-hop headers are dropped by ReverseProxy itself.
		Rewrite:   func(*httputil.ProxyRequest) {},
		Transport: transport,
		// An answer, whatever its status, means the host was reached.
		ModifyResponse: func(resp *http.Response) error {
			host, port := hostPort(resp.Request.URL.Host, resp.Request.URL.Scheme)
			p.obs.Reached(Reach{Host: host, Port: port})
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if refusal, ok := errors.AsType[*addrRefused](err); ok {
				host, port := hostPort(r.URL.Host, r.URL.Scheme)
				p.refuse(w, host, port, refusal.reason)
				return
			}
			http.Error(w, "agentbot egress proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	if in := cfg.Inject; in != nil {
		p.fwd.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: in.roots, MinVersion: tls.VersionTLS12}
	}
	return p
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" || r.URL.Scheme != "http" {
		http.Error(w, "agentbot egress proxy: only http:// requests in absolute form and CONNECT are forwarded", http.StatusBadRequest)
		return
	}
	host, port := hostPort(r.URL.Host, r.URL.Scheme)
	if !p.check(w, host, port) {
		return
	}
	p.inject.authorize(r.Header, "http", host, port)
	p.fwd.ServeHTTP(w, r)
}

// check refuses, and reports, a destination that is not allowed or that
// names a link-local address.
func (p *Proxy) check(w http.ResponseWriter, host string, port int) bool {
	if ip, err := netip.ParseAddr(host); err == nil && app.IsMetadataAddr(ip) {
		p.refuse(w, host, port, ReasonMetadata)
		return false
	}
	if !app.HostAllowed(p.cfg.Allow, host, port) {
		p.refuse(w, host, port, ReasonNotAllowed)
		return false
	}
	return true
}

// dialable is the check on the address a connection is about to be made
// to, whatever name led there.
func (p *Proxy) dialable(ap netip.AddrPort) error {
	switch {
	case app.IsMetadataAddr(ap.Addr()):
		return &addrRefused{ReasonMetadata}
	case !app.AddrAllowed(p.cfg.Allow, ap.Addr(), int(ap.Port()), p.cfg.Internal):
		return &addrRefused{ReasonInternal}
	}
	return nil
}

func (p *Proxy) refuse(w http.ResponseWriter, host string, port int, reason string) {
	host = CutHost(host)
	r := Refusal{Host: host, Port: port, Time: p.now().UTC(), Reason: reason}
	p.obs.Refused(r)
	p.log.Info("egress refused", "host", host, "port", port, "reason", reason)
	http.Error(w, "agentbot egress proxy: "+r.String(), http.StatusForbidden)
}

// connect opens a CONNECT tunnel to an allowed host:port.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, port := hostPort(r.Host, "https")
	if port == 0 {
		http.Error(w, "agentbot egress proxy: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	if !p.check(w, host, port) {
		return
	}
	if p.inject.intercepts(host, port) {
		p.intercept(w, host, port)
		return
	}
	upstream, err := p.dialer.DialContext(r.Context(), "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if refusal, ok := errors.AsType[*addrRefused](err); ok {
		p.refuse(w, host, port, refusal.reason)
		return
	}
	if err != nil {
		http.Error(w, "agentbot egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer upstream.Close()
	p.obs.Reached(Reach{Host: host, Port: port})
	client, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, "agentbot egress proxy: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer client.Close()
	// The deadline the server set for reading the request must not end
	// the tunnel.
	client.SetDeadline(time.Time{})
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		// Bytes the client sent past the request are already buffered.
		io.Copy(upstream, buf.Reader)
		closeWrite(upstream)
	})
	io.Copy(client, upstream)
	closeWrite(client)
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// CutHost returns host cut to MaxHost bytes, marked when cut.
func CutHost(host string) string {
	if len(host) <= MaxHost {
		return host
	}
	return strings.ToValidUTF8(host[:MaxHost], "") + "…"
}

// hostPort splits authority into host and port, the scheme's default port
// when it names none; port 0 when the port is not a number.
func hostPort(authority, scheme string) (string, int) {
	host, p, err := net.SplitHostPort(authority)
	if err != nil {
		host, p = strings.TrimSuffix(strings.TrimPrefix(authority, "["), "]"), map[string]string{"http": "80", "https": "443"}[scheme]
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return host, 0
	}
	return host, port
}

// MaxRefusals bounds the refusals Serve reports, and MaxReached the hosts
// it reports reached: a setup that tries host after host must not flood
// the trace and the audit log.
const (
	MaxRefusals = 100
	MaxReached  = 100
)

// Serve runs the proxy on ln until ctx ends, writing one JSON Event per
// line to out: Ready once it accepts connections, then each refusal of a
// host, port and reason not refused before, up to MaxRefusals, and each
// host and port reached for the first time, up to MaxReached.
func Serve(ctx context.Context, ln net.Listener, cfg Config, out io.Writer, log *slog.Logger) error {
	em := &emitter{enc: json.NewEncoder(out), log: log, refused: map[Refusal]bool{}, reached: map[Reach]bool{}}
	p := New(cfg, em, log)
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	em.emit(Event{Ready: ln.Addr().String(), CA: p.inject.CA()})
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("egress proxy: %w", err)
	}
	return nil
}

// emitter writes a proxy's events, each distinct refusal and reach once.
type emitter struct {
	mu      sync.Mutex
	enc     *json.Encoder
	log     *slog.Logger
	refused map[Refusal]bool // by host, port and reason
	reached map[Reach]bool
}

func (em *emitter) Refused(r Refusal) {
	key := Refusal{Host: r.Host, Port: r.Port, Reason: r.Reason}
	once(em, em.refused, key, MaxRefusals, Event{Refused: &r})
}

func (em *emitter) Reached(r Reach) {
	r.Host = CutHost(r.Host)
	once(em, em.reached, r, MaxReached, Event{Reached: &r})
}

// once emits e unless seen holds key or is full.
func once[K comparable](em *emitter, seen map[K]bool, key K, limit int, e Event) {
	em.mu.Lock()
	defer em.mu.Unlock()
	if seen[key] || len(seen) == limit {
		return
	}
	seen[key] = true
	em.emitLocked(e)
}

func (em *emitter) emit(e Event) {
	em.mu.Lock()
	defer em.mu.Unlock()
	em.emitLocked(e)
}

func (em *emitter) emitLocked(e Event) {
	if err := em.enc.Encode(e); err != nil {
		em.log.Warn("egress proxy: write event", "err", err)
	}
}

// OnlyFrom returns ln accepting connections from the given networks only,
// closing others at once: the proxy serves its setup network, not every
// container on the default bridge it also sits on. No prefixes: any peer.
func OnlyFrom(ln net.Listener, prefixes []netip.Prefix) net.Listener {
	if len(prefixes) == 0 {
		return ln
	}
	return &filtered{Listener: ln, prefixes: prefixes}
}

type filtered struct {
	net.Listener
	prefixes []netip.Prefix
}

func (f *filtered) Accept() (net.Conn, error) {
	for {
		c, err := f.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			for _, p := range f.prefixes {
				if p.Contains(ap.Addr().Unmap()) {
					return c, nil
				}
			}
		}
		c.Close()
	}
}
