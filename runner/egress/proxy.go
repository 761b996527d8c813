// Package egress is the forward proxy through which the setup phase
// reaches the network: it connects only to the hosts of the server
// config's setup.allow_hosts, never to a link-local (cloud metadata)
// address, and records every connection it refuses.
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
// stdout: first Ready, then one Refused per refused connection.
package egress

import (
	"context"
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
)

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

// Event is one line of the proxy's output.
type Event struct {
	Ready   string   `json:"ready,omitempty"` // the address it listens on
	CA      string   `json:"ca,omitempty"`    // with Ready: Injector.CA
	Refused *Refusal `json:"refused,omitempty"`
}

// Proxy is the forward proxy's handler.
type Proxy struct {
	allow   []app.AllowHost
	refused func(Refusal)
	dialer  *net.Dialer
	fwd     *httputil.ReverseProxy
	log     *slog.Logger
	now     func() time.Time
	inject  *Injector // nil: no registry has credentials
}

// errMetadata is what the dialer's Control returns for a link-local
// address: the name resolved there, whatever it was.
var errMetadata = errors.New("link-local address")

// New returns a proxy that connects only to hosts allow covers and calls
// refused, which must be safe for concurrent use, for every connection it
// refuses.
func New(allow []app.AllowHost, refused func(Refusal), log *slog.Logger, opts ...Option) *Proxy {
	p := &Proxy{allow: allow, refused: refused, log: log, now: time.Now}
	// The check runs on the address actually dialled, after name
	// resolution, so no DNS name can lead to the metadata address.
	p.dialer = &net.Dialer{Timeout: dialTimeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("dial %s: %w", address, err)
		}
		if app.IsMetadataAddr(ap.Addr()) {
			return errMetadata
		}
		return nil
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
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, errMetadata) {
				host, port := hostPort(r.URL.Host, r.URL.Scheme)
				p.refuse(w, host, port, ReasonMetadata)
				return
			}
			http.Error(w, "agentbot egress proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	for _, o := range opts {
		o(p)
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
	if !app.HostAllowed(p.allow, host, port) {
		p.refuse(w, host, port, ReasonNotAllowed)
		return false
	}
	return true
}

func (p *Proxy) refuse(w http.ResponseWriter, host string, port int, reason string) {
	r := Refusal{Host: host, Port: port, Time: p.now().UTC(), Reason: reason}
	p.refused(r)
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
	if errors.Is(err, errMetadata) {
		p.refuse(w, host, port, ReasonMetadata)
		return
	}
	if err != nil {
		http.Error(w, "agentbot egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer upstream.Close()
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

// MaxRefusals bounds the refusals Serve reports: a setup that tries host
// after host must not flood the trace and the audit log.
const MaxRefusals = 100

// Serve runs the proxy on ln until ctx ends, writing one JSON Event per
// line to out: Ready once it accepts connections, then each refusal of a
// host, port and reason not refused before, up to MaxRefusals.
func Serve(ctx context.Context, ln net.Listener, allow []app.AllowHost, out io.Writer, log *slog.Logger, opts ...Option) error {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	seen := map[Refusal]bool{}
	emit := func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		if r := e.Refused; r != nil {
			key := Refusal{Host: r.Host, Port: r.Port, Reason: r.Reason}
			if seen[key] || len(seen) == MaxRefusals {
				return
			}
			seen[key] = true
		}
		if err := enc.Encode(e); err != nil {
			log.Warn("egress proxy: write event", "err", err)
		}
	}
	p := New(allow, func(r Refusal) { emit(Event{Refused: &r}) }, log, opts...)
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	emit(Event{Ready: ln.Addr().String(), CA: p.inject.CA()})
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("egress proxy: %w", err)
	}
	return nil
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
