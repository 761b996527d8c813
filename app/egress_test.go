package app

import (
	"net/netip"
	"testing"
)

func TestParseAllowHost(t *testing.T) {
	tests := []struct {
		in   string
		want AllowHost
	}{
		{"proxy.golang.org", AllowHost{Host: "proxy.golang.org"}},
		{"PyPI.org.:443", AllowHost{Host: "pypi.org", Port: 443}},
		{"10.0.0.5:8081", AllowHost{Host: "10.0.0.5", Port: 8081}},
		{"[2001:db8::1]:8080", AllowHost{Host: "2001:db8::1", Port: 8080}},
		{"2001:db8::1", AllowHost{Host: "2001:db8::1"}},
		{"*.example.com", AllowHost{Host: "*.example.com"}},
		{"localhost", AllowHost{Host: "localhost"}},
		{"10.8.3.0/16", AllowHost{Host: "10.8.0.0/16"}},
		{"172.18.0.0/16:5000", AllowHost{Host: "172.18.0.0/16", Port: 5000}},
		{"[fd00::/8]:5000", AllowHost{Host: "fd00::/8", Port: 5000}},
		{"::ffff:127.0.0.0/104", AllowHost{Host: "127.0.0.0/8"}},
	}
	for _, tt := range tests {
		got, err := ParseAllowHost(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseAllowHost(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseAllowHostErrors(t *testing.T) {
	tests := map[string]string{
		"":                         "is empty; write a host such as proxy.golang.org or 10.0.0.5:8081",
		"http://pypi.org":          `"http://pypi.org" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)`,
		"pypi.org/simple":          `"pypi.org/simple" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)`,
		"user@pypi.org":            `"user@pypi.org" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)`,
		"pypi.org:0":               `"pypi.org:0": port "0" is not a number from 1 to 65535`,
		"pypi.org:70000":           `"pypi.org:70000": port "70000" is not a number from 1 to 65535`,
		"pypi.org:":                `"pypi.org:": port "" is not a number from 1 to 65535`,
		"bad_-.example-":           `"bad_-.example-" is not a host name or an IP address`,
		"a..b":                     `"a..b" is not a host name or an IP address`,
		"*":                        `"*" is not a host name or an IP address`,
		"foo.*.com":                `"foo.*.com" is not a host name or an IP address`,
		"169.254.169.254:80":       `"169.254.169.254:80" is a link-local (cloud metadata) address, which setup may never reach`,
		"[fd00:ec2::254]":          `"[fd00:ec2::254]" is a link-local (cloud metadata) address, which setup may never reach`,
		"[::ffff:169.254.169.254]": `"[::ffff:169.254.169.254]" is a link-local (cloud metadata) address, which setup may never reach`,
		"169.254.0.0/16":           `"169.254.0.0/16" is a link-local (cloud metadata) network, which setup may never reach`,
		"10.0.0.0/33":              `"10.0.0.0/33" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)`,
		"10.0.0.0/8/8":             `"10.0.0.0/8/8" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)`,
	}
	for in, want := range tests {
		_, err := ParseAllowHost(in)
		if err == nil || err.Error() != want {
			t.Errorf("ParseAllowHost(%q) = %v; want %q", in, err, want)
		}
	}
}

func TestAllowHostAllows(t *testing.T) {
	list := []AllowHost{{Host: "proxy.golang.org"}, {Host: "pypi.org", Port: 443}, {Host: "*.example.com", Port: 8080}}
	tests := []struct {
		host string
		port int
		want bool
	}{
		{"proxy.golang.org", 443, true},
		{"PROXY.golang.org.", 80, true},
		{"proxy.golang.org", 22, false},
		{"pypi.org", 443, true},
		{"pypi.org", 80, false},
		{"evil.pypi.org", 443, false},
		{"a.example.com", 8080, true},
		{"example.com", 8080, false},
		{"a.example.com", 443, false},
		{"evil.example", 443, false},
	}
	for _, tt := range tests {
		if got := HostAllowed(list, tt.host, tt.port); got != tt.want {
			t.Errorf("HostAllowed(%s:%d) = %v, want %v", tt.host, tt.port, got, tt.want)
		}
	}
}

func TestIsMetadataAddr(t *testing.T) {
	for s, want := range map[string]bool{
		"169.254.169.254": true, "fd00:ec2::254": true, "::ffff:169.254.169.254": true, "fe80::1": true,
		"10.0.0.5": false, "127.0.0.1": false, "2001:db8::1": false,
	} {
		if got := IsMetadataAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("IsMetadataAddr(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestIsInternalAddr(t *testing.T) {
	cluster := []netip.Prefix{netip.MustParsePrefix("34.118.224.0/20")}
	for s, want := range map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true, "::ffff:127.0.0.1": true,
		"172.17.0.1": true, "10.1.2.3": true, "192.168.1.1": true, "::ffff:10.1.2.3": true,
		"100.64.0.1": true, "100.127.255.254": true, "fc00::1": true, "fd12:3456::1": true,
		"0.0.0.0": true, "::": true, "224.0.0.1": true, "ff02::1": true, "255.255.255.255": true,
		"169.254.169.254": true, "fe80::1": true, "34.118.230.1": true,
		"8.8.8.8": false, "100.128.0.1": false, "2606:4700::1111": false, "::ffff:8.8.8.8": false, "34.118.240.1": false,
	} {
		if got := IsInternalAddr(netip.MustParseAddr(s), cluster); got != want {
			t.Errorf("IsInternalAddr(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestAddrAllowed(t *testing.T) {
	var list []AllowHost
	for _, e := range []string{"registry.example", "127.0.0.1:8080", "172.18.0.0/16", "0.0.0.0/0:22"} {
		a, err := ParseAllowHost(e)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, a)
	}
	tests := []struct {
		addr string
		port int
		want bool
	}{
		{"140.82.112.3", 443, true},      // an Internet address
		{"127.0.0.1", 8080, true},        // allowed as an address
		{"::ffff:127.0.0.1", 8080, true}, // the same, mapped
		{"127.0.0.1", 443, false},        // another port
		{"127.0.0.2", 8080, false},       // another loopback address
		{"172.18.0.5", 443, true},        // inside the allowed network
		{"172.19.0.5", 443, false},       // a private address outside it
		{"10.0.0.1", 22, true},           // inside 0.0.0.0/0 on its port
		{"169.254.169.254", 22, false},   // never, whatever covers it
		{"100.64.0.1", 443, false},
		{"fd00::1", 443, false},
	}
	for _, tt := range tests {
		if got := AddrAllowed(list, netip.MustParseAddr(tt.addr), tt.port, nil); got != tt.want {
			t.Errorf("AddrAllowed(%s:%d) = %v, want %v", tt.addr, tt.port, got, tt.want)
		}
	}
	if !HostAllowed(list, "172.18.3.4", 443) || HostAllowed(list, "172.19.3.4", 443) {
		t.Error("a CIDR entry allows the addresses inside it, and only those, when they are asked for by address")
	}
}
