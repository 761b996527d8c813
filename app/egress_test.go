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
