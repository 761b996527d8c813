package app

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// AllowHost is one entry of the server config's setup.allow_hosts: a host
// the setup phase may reach through the worker's egress proxy. A host
// written without a port allows the web's ports, 443 and 80.
type AllowHost struct {
	// Host is a name in lower case, without a trailing dot
	// ("*.example.com" allows every subdomain), an IP address, or a
	// network in CIDR form ("10.8.0.0/16").
	Host string
	Port int // 0: 443 and 80
}

func (a AllowHost) String() string {
	if a.Port == 0 {
		return a.Host
	}
	return net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}

// Allows reports whether the entry covers host:port; host is compared
// without case and without a trailing dot.
func (a AllowHost) Allows(host string, port int) bool {
	host = normalHost(host)
	if !a.allowsPort(port) {
		return false
	}
	if n, ok := a.network(); ok {
		ip, err := netip.ParseAddr(host)
		return err == nil && n.Contains(ip.Unmap())
	}
	if suffix, ok := strings.CutPrefix(a.Host, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == a.Host
}

func (a AllowHost) allowsPort(port int) bool {
	if a.Port == 0 {
		return port == 443 || port == 80
	}
	return port == a.Port
}

// network is the addresses an IP address or CIDR entry names; ok is false
// for a name.
func (a AllowHost) network() (n netip.Prefix, ok bool) {
	if ip, err := netip.ParseAddr(a.Host); err == nil {
		return netip.PrefixFrom(ip, ip.BitLen()), true
	}
	n, err := netip.ParsePrefix(a.Host)
	return n, err == nil
}

// HostAllowed reports whether any entry of list covers host:port.
func HostAllowed(list []AllowHost, host string, port int) bool {
	for _, a := range list {
		if a.Allows(host, port) {
			return true
		}
	}
	return false
}

// IsMetadataAddr reports whether ip is a link-local address, where clouds
// serve instance metadata and credentials (169.254.169.254, fd00:ec2::254):
// the setup phase never reaches one, whatever the allow list says.
func IsMetadataAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLinkLocalUnicast() || ip == netip.MustParseAddr("fd00:ec2::254")
}

// internalNets are the address classes that are not the Internet: the
// worker's own host and networks, its cluster's, and addresses no server
// holds. IsInternalAddr names the rest.
var internalNets = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT, often a cluster's pod network
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),           // IPv4-compatible IPv6
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("fec0::/10"),       // site-local
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:10::/28"),    // ORCHID
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relays
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
}

// IsInternalAddr reports whether ip is not an Internet address: loopback,
// private (RFC 1918, IPv6 ULA fc00::/7, where Docker's bridges and a
// cluster's services live), carrier-grade NAT, link-local, unspecified,
// multicast or reserved, in IPv4 or IPv4-mapped form, or inside one of
// extra (a cluster's service range the operator configures). A name that
// the egress proxy resolves to such an address is refused: only an IP
// address or CIDR entry of setup.allow_hosts reaches one.
func IsInternalAddr(ip netip.Addr, extra []netip.Prefix) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || IsMetadataAddr(ip) {
		return true
	}
	for _, n := range slices.Concat(internalNets, extra) {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// AddrAllowed reports whether the egress proxy may connect to ip:port, an
// address a name resolved to: never a link-local one; an internal one
// (IsInternalAddr, with extra) only when an IP address or CIDR entry of
// list covers it, so that no name, and no DNS owner re-pointing one, leads
// setup to the worker's own networks.
func AddrAllowed(list []AllowHost, ip netip.Addr, port int, extra []netip.Prefix) bool {
	ip = ip.Unmap()
	if IsMetadataAddr(ip) {
		return false
	}
	if !IsInternalAddr(ip, extra) {
		return true
	}
	for _, a := range list {
		if n, ok := a.network(); ok && a.allowsPort(port) && n.Contains(ip) {
			return true
		}
	}
	return false
}

// ParseAllowHost reads one allow_hosts entry: "host", "host:port",
// "*.domain[:port]", an IPv4 address or a bracketed IPv6 one, or a network
// in CIDR form ("10.8.0.0/16", "[fd00::/8]:5000"), with an optional port.
// It returns a sentence saying what is wrong otherwise.
func ParseAllowHost(s string) (AllowHost, error) {
	if s == "" {
		return AllowHost{}, fmt.Errorf("is empty; write a host such as proxy.golang.org or 10.0.0.5:8081")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "?#@ \t") || strings.Count(s, "/") > 1 {
		return AllowHost{}, fmt.Errorf("%q is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)", s)
	}
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return AllowHost{}, fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, p)
		}
		host, port = h, n
	} else if strings.HasPrefix(s, "[") != strings.HasSuffix(s, "]") || strings.Count(s, ":") == 1 {
		return AllowHost{}, fmt.Errorf("%q is not host:port (%v)", s, err)
	}
	host = normalHost(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if strings.Contains(host, "/") {
		return parseAllowNetwork(s, host, port)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if IsMetadataAddr(ip) {
			return AllowHost{}, fmt.Errorf("%q is a link-local (cloud metadata) address, which setup may never reach", s)
		}
		return AllowHost{Host: ip.Unmap().String(), Port: port}, nil
	}
	name := strings.TrimPrefix(host, "*.")
	if !validHostname(name) || strings.Contains(name, "*") {
		return AllowHost{}, fmt.Errorf("%q is not a host name or an IP address", s)
	}
	return AllowHost{Host: host, Port: port}, nil
}

// parseAllowNetwork reads the CIDR host of entry s.
func parseAllowNetwork(s, host string, port int) (AllowHost, error) {
	n, err := netip.ParsePrefix(host)
	if err != nil {
		return AllowHost{}, fmt.Errorf("%q is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)", s)
	}
	n = n.Masked()
	if n.Addr().Is4In6() && n.Bits() >= 96 {
		n = netip.PrefixFrom(n.Addr().Unmap(), n.Bits()-96)
	}
	if IsMetadataAddr(n.Addr()) {
		return AllowHost{}, fmt.Errorf("%q is a link-local (cloud metadata) network, which setup may never reach", s)
	}
	return AllowHost{Host: n.String(), Port: port}, nil
}

func normalHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

// validHostname reports whether name is dot-separated labels of letters,
// digits and inner hyphens, as DNS names are.
func validHostname(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
