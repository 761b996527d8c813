// Package webhooktest holds what the intake's tests send and no product
// sends: forged signatures and stalled, endless bodies.
package webhooktest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Forged is a well-formed X-Hub-Signature-256 that signs nothing: the
// intake reads a body under it to its end before it can tell.
var Forged = "sha256=" + strings.Repeat("0", 64)

// Filler is an endless body that costs its sender no memory.
type Filler struct{}

func (Filler) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// Stall posts a delivery to addr's /webhook from the local address from,
// as a sender holding the intake's memory would: headers that declare a
// body of declared bytes under a forged signature, sent bytes of it, and
// then nothing. It returns the connection, open, once those bytes are
// written; or with an error when the intake refused the body and closed
// the connection first. Closing the connection ends the stall.
func Stall(ctx context.Context, addr string, from netip.Addr, declared, sent int64) (net.Conn, error) {
	conn, err := Dialer(from).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("stall from %s: %w", from, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	_, err = fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: intake\r\nX-GitHub-Event: issue_comment\r\n"+
		"X-GitHub-Delivery: stall-%s\r\nX-Hub-Signature-256: %s\r\nContent-Length: %d\r\n\r\n",
		conn.LocalAddr(), Forged, declared)
	if err == nil {
		_, err = io.CopyN(conn, Filler{}, sent)
	}
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("stall from %s: %w", from, err)
	}
	return conn, nil
}

// Dialer dials from the local address from: on loopback, each address of
// 127.0.0.0/8 is a peer of its own to the intake.
func Dialer(from netip.Addr) *net.Dialer {
	return &net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))}
}

// ClientFrom returns an HTTP client whose connections come from the local
// address from.
func ClientFrom(from netip.Addr) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: Dialer(from).DialContext, MaxIdleConnsPerHost: 64}}
}
