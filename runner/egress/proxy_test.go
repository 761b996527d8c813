package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/ostest"
)

var quiet = slog.New(slog.DiscardHandler)

// recorder keeps the refusals and the reaches a proxy reports.
type recorder struct {
	mu      sync.Mutex
	list    []Refusal
	reached []string
}

func (r *recorder) Refused(x Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, x)
}

func (r *recorder) Reached(x Reach) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reached = append(r.reached, x.String())
}

func (r *recorder) reaches() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reached)
}

func (r *recorder) strings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, x := range r.list {
		s = append(s, x.String())
	}
	return s
}

func allowOf(t *testing.T, u string) app.AllowHost {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.ParseAllowHost(parsed.Host)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// startProxy serves p on loopback and returns a client that uses it for
// every request, trusting tlsSrv's certificate when given.
func startProxy(t *testing.T, p *Proxy, tlsSrv *httptest.Server) *http.Client {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	proxyURL, _ := url.Parse(srv.URL)
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
	if tlsSrv != nil {
		tr.TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func TestProxyForwardsToAllowedHosts(t *testing.T) {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello "+r.URL.Path) })
	plain := httptest.NewServer(hello)
	defer plain.Close()
	secure := httptest.NewTLSServer(hello)
	defer secure.Close()
	var rec recorder
	p := New(Config{Allow: []app.AllowHost{allowOf(t, plain.URL), allowOf(t, secure.URL)}}, &rec, quiet)
	client := startProxy(t, p, secure)
	for _, u := range []string{plain.URL + "/plain", secure.URL + "/tunnel"} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s through the proxy: %v", u, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "hello /") {
			t.Errorf("GET %s: %d %q", u, resp.StatusCode, body)
		}
	}
	if got := rec.strings(); len(got) != 0 {
		t.Errorf("refusals of allowed hosts: %q", got)
	}
	// Both hosts are reported reached, each as often as it was reached.
	want := []string{strings.TrimPrefix(plain.URL, "http://"), strings.TrimPrefix(secure.URL, "https://")}
	if got := rec.reaches(); !slices.Equal(got, want) {
		t.Errorf("reached %q; want %q", got, want)
	}
}

func TestProxyRefusesAndRecords(t *testing.T) {
	var served int
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
	defer target.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(target.URL, "http://"))
	var rec recorder
	// The metadata address is refused even when the list names it (the
	// server config refuses such an entry; the proxy does not rely on it).
	allow := []app.AllowHost{{Host: "169.254.169.254", Port: 80}, {Host: "fd00:ec2::254"}}
	p := New(Config{Allow: allow}, &rec, quiet)
	p.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	client := startProxy(t, p, nil)

	for _, u := range []string{
		"http://127.0.0.1:" + port + "/", // a reachable host, not listed
		"https://evil.example/",
		"http://169.254.169.254/latest/meta-data/",
		"https://[fd00:ec2::254]/",
		"http://[fd00:ec2::254]/",
	} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s: %d, want 403", u, resp.StatusCode)
			}
		}
	}
	want := []string{
		"setup tried to reach 127.0.0.1:" + port + " — not in setup.allow_hosts",
		"setup tried to reach evil.example:443 — not in setup.allow_hosts",
		"setup tried to reach 169.254.169.254:80 — a link-local (cloud metadata) address, never reachable",
		"setup tried to reach [fd00:ec2::254]:443 — a link-local (cloud metadata) address, never reachable",
		"setup tried to reach [fd00:ec2::254]:80 — a link-local (cloud metadata) address, never reachable",
	}
	if got := rec.strings(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refusals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if served != 0 {
		t.Errorf("the unlisted host served %d requests", served)
	}
	if got := rec.reaches(); len(got) != 0 {
		t.Errorf("refused hosts reported reached: %q", got)
	}
	if rec.list[0].Time != p.now() || rec.list[0].Port == 0 {
		t.Errorf("refusal %+v lacks its time or port", rec.list[0])
	}
}

// A name that resolves to the metadata address is refused at dial time,
// even when the list allows the name.
func TestProxyRefusesNamesResolvingToMetadata(t *testing.T) {
	var rec recorder
	p := New(Config{Allow: []app.AllowHost{{Host: "metadata.test"}}}, &rec, quiet)
	p.dialer.Resolver = fakeDNS(t, "169.254.169.254")
	client := startProxy(t, p, nil)
	for _, u := range []string{"http://metadata.test/latest/meta-data/", "https://metadata.test/"} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s: %d, want 403", u, resp.StatusCode)
			}
		}
	}
	want := "setup tried to reach metadata.test:80 — a link-local (cloud metadata) address, never reachable\n" +
		"setup tried to reach metadata.test:443 — a link-local (cloud metadata) address, never reachable"
	if got := strings.Join(rec.strings(), "\n"); got != want {
		t.Errorf("refusals:\n%s\nwant:\n%s", got, want)
	}
}

// An allowed name that resolves to an internal address — loopback, where
// the worker's own services listen, or a private one, where Docker's
// bridges and a cluster's services are — is refused at dial time; the
// same address is reached once setup.allow_hosts names it as an address
// or a network.
func TestProxyRefusesNamesResolvingToInternalAddresses(t *testing.T) {
	var served atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, "internal")
	}))
	defer target.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(target.URL, "http://"))
	get := func(client *http.Client, u string) int {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	names := []app.AllowHost{{Host: "registry.test", Port: atoi(t, port)}, {Host: "localhost", Port: atoi(t, port)}, {Host: "cluster.test"}}

	var rec recorder
	p := New(Config{Allow: names}, &rec, quiet)
	p.dialer.Resolver = fakeDNS(t, "127.0.0.1")
	client := startProxy(t, p, nil)
	for _, u := range []string{"http://registry.test:" + port + "/", "http://localhost:" + port + "/"} {
		if code := get(client, u); code != http.StatusForbidden {
			t.Errorf("GET %s: %d, want 403", u, code)
		}
	}
	want := "setup tried to reach registry.test:" + port + " — " + ReasonInternal + "\n" +
		"setup tried to reach localhost:" + port + " — " + ReasonInternal
	if got := strings.Join(rec.strings(), "\n"); got != want {
		t.Errorf("refusals:\n%s\nwant:\n%s", got, want)
	}
	for _, ip := range []string{"10.96.0.1", "172.17.0.1", "100.64.0.1", "192.168.1.1"} {
		var rec recorder
		p := New(Config{Allow: names}, &rec, quiet)
		p.dialer.Resolver = fakeDNS(t, ip)
		if code := get(startProxy(t, p, nil), "http://cluster.test/"); code != http.StatusForbidden || len(rec.list) != 1 || rec.list[0].Reason != ReasonInternal {
			t.Errorf("cluster.test at %s: %d, refusals %q; want 403 as internal", ip, code, rec.strings())
		}
	}
	if served.Load() != 0 {
		t.Fatalf("the internal server answered %d requests through names", served.Load())
	}

	// The operator names the address, or its network: it is reached, by
	// address and through a name that resolves inside it.
	for _, entry := range []string{"127.0.0.1:" + port, "127.0.0.0/8:" + port} {
		a, err := app.ParseAllowHost(entry)
		if err != nil {
			t.Fatal(err)
		}
		var rec recorder
		p := New(Config{Allow: append(names, a)}, &rec, quiet)
		p.dialer.Resolver = fakeDNS(t, "127.0.0.1")
		client := startProxy(t, p, nil)
		for _, u := range []string{"http://127.0.0.1:" + port + "/", "http://registry.test:" + port + "/"} {
			if code := get(client, u); code != http.StatusOK {
				t.Errorf("with %s allowed, GET %s: %d, want 200 (refusals %q)", entry, u, code, rec.strings())
			}
		}
	}
	// A configured cluster range is internal too, whatever its addresses.
	var crec recorder
	p = New(Config{Allow: names, Internal: []netip.Prefix{netip.MustParsePrefix("34.118.224.0/20")}}, &crec, quiet)
	p.dialer.Resolver = fakeDNS(t, "34.118.230.7")
	get(startProxy(t, p, nil), "http://cluster.test/")
	if len(crec.list) != 1 || crec.list[0].Reason != ReasonInternal {
		t.Errorf("a name in the configured internal range: refusals %q; want it refused as internal", crec.strings())
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A refused host is cut before it is reported or logged, however long a
// name the request carried.
func TestProxyCutsTheHostsItRefuses(t *testing.T) {
	var rec recorder
	var logged ostest.SyncBuffer
	p := New(Config{}, &rec, slog.New(slog.NewTextHandler(&logged, nil)))
	client := startProxy(t, p, nil)
	long := strings.Repeat("a", 60) + "." + strings.Repeat("b", 200<<10) + ".example"
	resp, err := client.Get("http://" + long + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(rec.list) != 1 {
		t.Fatalf("%d refusals; want 1", len(rec.list))
	}
	if h := rec.list[0].Host; len(h) > MaxHost+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(h, "…")) {
		t.Errorf("refused host of %d bytes; want the name's first %d", len(h), MaxHost)
	}
	if len(logged.String()) > 2048 || len(body) > 2048 {
		t.Errorf("the refusal took %d bytes of log and %d of answer; want the host cut in both", len(logged.String()), len(body))
	}
}

func TestProxyRejectsWhatIsNotAProxyRequest(t *testing.T) {
	var rec recorder
	srv := httptest.NewServer(New(Config{}, &rec, quiet))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/origin-form")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("origin-form request: %d, want 400", resp.StatusCode)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "CONNECT no-port.example HTTP/1.1\r\nHost: no-port.example\r\n\r\n")
	line, _ := bufio.NewReader(conn).ReadString('\n')
	if !strings.Contains(line, "403") {
		// A CONNECT without a port defaults to 443 and is refused as not listed.
		t.Errorf("CONNECT without a port: %q", line)
	}
}

func TestServeReportsReadyRefusalsAndReaches(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	registry := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer registry.Close()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, Config{Allow: []app.AllowHost{allowOf(t, registry.URL)}}, pw, quiet) }()
	dec := json.NewDecoder(pr)
	var ready Event
	if err := dec.Decode(&ready); err != nil || ready.Ready != ln.Addr().String() {
		t.Fatalf("first event %+v, %v; want ready on %s", ready, err, ln.Addr())
	}
	proxyURL, _ := url.Parse("http://" + ln.Addr().String())
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{}}}
	go func() {
		if resp, err := client.Get("http://evil.example:8080/"); err == nil {
			resp.Body.Close()
		}
	}()
	var e Event
	if err := dec.Decode(&e); err != nil || e.Refused == nil || e.Refused.Host != "evil.example" || e.Refused.Port != 8080 {
		t.Fatalf("second event %+v, %v; want the refusal of evil.example:8080", e, err)
	}
	// An allowed host is reported reached, once however often.
	go func() {
		for range 2 {
			if resp, err := client.Get(registry.URL + "/simple/"); err == nil {
				resp.Body.Close()
			}
		}
	}()
	if err := dec.Decode(&e); err != nil || e.Reached == nil || e.Reached.String() != strings.TrimPrefix(registry.URL, "http://") {
		t.Fatalf("third event %+v, %v; want %s reached", e, err, registry.URL)
	}
	// The same refusal again is not reported again; distinct ones are, up
	// to MaxRefusals. Events are read as they come: the proxy waits on its
	// output.
	var got []Event
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			var e Event
			if dec.Decode(&e) != nil {
				return
			}
			got = append(got, e)
		}
	}()
	if resp, err := client.Get(registry.URL + "/again/"); err == nil {
		resp.Body.Close()
	}
	for port := 8080; port < 8080+MaxRefusals+5; port++ {
		if resp, err := client.Get(fmt.Sprintf("http://evil.example:%d/", port)); err == nil {
			resp.Body.Close()
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
	pw.Close()
	<-collected
	if len(got) != MaxRefusals-1 {
		t.Errorf("%d more refusals reported; want %d, the rest of MaxRefusals", len(got), MaxRefusals-1)
	}
	for _, e := range got {
		if e.Refused == nil || e.Refused.Port == 8080 {
			t.Errorf("event %+v: want a refusal of a port other than 8080, reported already", e)
		}
	}
}

// fakeDNS is a resolver whose every A query is answered with ip.
func fakeDNS(t *testing.T, ip string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	a := net.ParseIP(ip).To4()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) == 0 {
				continue
			}
			q := m.Questions[0]
			m.Header.Response, m.Header.Authoritative = true, true
			m.Answers = nil
			if q.Type == dnsmessage.TypeA {
				m.Answers = []dnsmessage.Resource{{
					Header: dnsmessage.ResourceHeader{Name: q.Name, Type: q.Type, Class: q.Class, TTL: 60},
					Body:   &dnsmessage.AResource{A: [4]byte(a)},
				}}
			}
			out, err := m.Pack()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}

func TestOnlyFrom(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })}
	go srv.Serve(OnlyFrom(ln, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}))
	defer srv.Close()
	if resp, err := http.Get("http://" + ln.Addr().String()); err == nil {
		resp.Body.Close()
		t.Errorf("a peer outside the accepted networks was served: %s", resp.Status)
	}
	if OnlyFrom(ln, nil) != ln {
		t.Error("OnlyFrom without prefixes wraps the listener")
	}
}

func TestOnlyFromAcceptsItsNetworks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })}
	go srv.Serve(OnlyFrom(ln, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "served" {
		t.Errorf("body %q", body)
	}
}
