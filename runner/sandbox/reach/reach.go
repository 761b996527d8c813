// Package reach is the probe a worker runs inside its containers at start
// to learn what they can reach: "agentbot reach-probe", in a package of its
// own so that the tests' executor runs the same code.
package reach

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ViaProxy marks a target the probe reached through the egress proxy.
const ViaProxy = " via-proxy"

// Probe tries each target, tcp:HOST:PORT or dns:HOST:PORT, and writes to
// out, one a line, those that answered. A tcp: target answers when a
// connection opens; a dns: target also when a query over UDP gets a
// reply. With proxyURL set (a setup container's HTTPS_PROXY) each target
// is also tried through the proxy, and written marked with ViaProxy when
// the proxy connected.
func Probe(ctx context.Context, out io.Writer, targets []string, proxyURL string, timeout time.Duration) error {
	type target struct{ arg, kind, addr string }
	var ts []target
	for _, a := range targets {
		kind, addr, ok := strings.Cut(a, ":")
		if !ok || (kind != "tcp" && kind != "dns") {
			return fmt.Errorf("target %q: want tcp:HOST:PORT or dns:HOST:PORT", a)
		}
		ts = append(ts, target{a, kind, addr})
	}
	direct, proxied := make([]bool, len(ts)), make([]bool, len(ts))
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Go(func() {
			direct[i] = dialAnswers(ctx, t.addr, timeout) || t.kind == "dns" && dnsAnswers(ctx, t.addr, timeout)
			proxied[i] = proxyURL != "" && connectAnswers(ctx, proxyURL, t.addr, timeout)
		})
	}
	wg.Wait()
	var errs []error
	for i, t := range ts {
		if direct[i] {
			_, err := fmt.Fprintln(out, t.arg)
			errs = append(errs, err)
		}
		if proxied[i] {
			_, err := fmt.Fprintln(out, t.arg+ViaProxy)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// connectAnswers reports whether the HTTP proxy at proxyURL opens a tunnel
// to addr within timeout: it answers a CONNECT with 200 once it has
// connected.
func connectAnswers(ctx context.Context, proxyURL, addr string, timeout time.Duration) bool {
	u, err := url.Parse(proxyURL)
	if err != nil || u.Host == "" {
		return false
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return false
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return false
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		return false
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// dialAnswers reports whether a connection to addr opens within timeout.
func dialAnswers(ctx context.Context, addr string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// dnsQuery asks for the root's NS records: any DNS server answers it.
var dnsQuery = []byte{0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1}

// dnsAnswers reports whether a DNS query over UDP to addr gets a reply
// within timeout.
func dnsAnswers(ctx context.Context, addr string, timeout time.Duration) bool {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return false
	}
	if _, err := c.Write(dnsQuery); err != nil {
		return false
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	return err == nil && n >= 2 && buf[0] == dnsQuery[0] && buf[1] == dnsQuery[1]
}
