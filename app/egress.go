package app

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// AllowHost is one entry of the server config's setup.allow_hosts: a host
// the setup phase may reach through the worker's egress proxy. A host
// written without a port allows the web's ports, 443 and 80.
type AllowHost struct {
	Host string // lower case, without a trailing dot; "*.example.com" allows every subdomain
	Port int    // 0: 443 and 80
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
	switch {
	case a.Port == 0 && port != 443 && port != 80:
		return false
	case a.Port != 0 && port != a.Port:
		return false
	}
	if suffix, ok := strings.CutPrefix(a.Host, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return host == a.Host
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

// ParseAllowHost reads one allow_hosts entry: "host", "host:port",
// "*.domain[:port]", an IPv4 address or a bracketed IPv6 one, with an
// optional port. It returns a sentence saying what is wrong otherwise.
func ParseAllowHost(s string) (AllowHost, error) {
	if s == "" {
		return AllowHost{}, fmt.Errorf("is empty; write a host such as proxy.golang.org or 10.0.0.5:8081")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ \t") {
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
