// Package registrytest serves package registries for tests of prepared
// environments: a PyPI "simple" index with one wheel and an npm registry
// with one package, on the Docker bridge's address, where setup
// containers (through the egress proxy) reach them, counting requests.
package registrytest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
)

// Registry is an HTTP server on the Docker bridge's address.
type Registry struct {
	URL      string // http://host:port
	Requests atomic.Int64
}

// Host is the registry's host:port, as setup.allow_hosts names it.
func (r *Registry) Host() string { return strings.TrimPrefix(r.URL, "http://") }

// Serve serves the handler h makes on the Docker bridge's address, counting
// requests. It skips the test when there is no docker0 bridge, or fails it
// under CI=true.
func Serve(t testing.TB, h func(r *Registry) http.Handler) *Registry {
	t.Helper()
	iface, err := net.InterfaceByName("docker0")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no docker0 bridge for the test's registry: %v", err)
		}
		t.Skipf("no docker0 bridge for the test's registry: %v", err)
	}
	addrs, _ := iface.Addrs()
	var gw string
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			gw = ip.IP.String()
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatalf("listen on the bridge: %v", err)
	}
	r := &Registry{URL: "http://" + ln.Addr().String()}
	inner := h(r)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		inner.ServeHTTP(w, req)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

// Wheel is a pure-Python wheel of package name 1.0 whose __init__.py is
// module.
func Wheel(t testing.TB, name, module string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	info := name + "-1.0.dist-info/"
	files := [][2]string{
		{name + "/__init__.py", module},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record bytes.Buffer
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f[1]))
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(record.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PyPI serves a "simple" index (under /simple/) holding package name 1.0,
// a wheel whose __init__.py is module.
func PyPI(t testing.TB, name, module string) *Registry {
	t.Helper()
	whl := Wheel(t, name, module)
	file := name + "-1.0-py3-none-any.whl"
	return Serve(t, func(r *Registry) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("/simple/"+name+"/", func(w http.ResponseWriter, _ *http.Request) {
			sum := sha256.Sum256(whl)
			fmt.Fprintf(w, `<html><body><a href="%s/files/%s#sha256=%s">%s</a></body></html>`, r.URL, file, hex.EncodeToString(sum[:]), file)
		})
		mux.HandleFunc("/files/"+file, func(w http.ResponseWriter, _ *http.Request) { w.Write(whl) })
		return mux
	})
}

// PipInstall is the setup command that installs requirements.txt from
// index into a virtualenv .venv in the tree.
func PipInstall(index *Registry) string {
	return "python3 -m venv --system-site-packages .venv && .venv/bin/pip install -q --trusted-host " + index.Host() +
		" --index-url " + index.URL + "/simple/ -r requirements.txt"
}

// NPMPackage is an npm registry holding one package.
type NPMPackage struct {
	*Registry
	Name      string
	Tarball   string // its URL
	Integrity string // sha512-…, as a lock file records it
}

// PackageLock is the package-lock.json of a package app 1.0.0 depending on
// the registry's package, for "npm ci".
func (p *NPMPackage) PackageLock(app string) string {
	lock, _ := json.MarshalIndent(map[string]any{
		"name": app, "version": "1.0.0", "lockfileVersion": 3, "requires": true,
		"packages": map[string]any{
			"":                       map[string]any{"name": app, "version": "1.0.0", "dependencies": map[string]string{p.Name: "1.0.0"}},
			"node_modules/" + p.Name: map[string]string{"version": "1.0.0", "resolved": p.Tarball, "integrity": p.Integrity},
		},
	}, "", "  ")
	return string(lock) + "\n"
}

// NPM serves an npm registry holding package name 1.0.0, whose index.js is
// indexJS.
func NPM(t testing.TB, name, indexJS string) *NPMPackage {
	t.Helper()
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range [][2]string{
		{"package/package.json", fmt.Sprintf(`{"name":%q,"version":"1.0.0","main":"index.js"}`, name)},
		{"package/index.js", indexJS},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f[1]))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	sha := sha1.Sum(tgz.Bytes())
	integrity := sha512.Sum512(tgz.Bytes())
	tarball := "/" + name + "/-/" + name + "-1.0.0.tgz"
	p := &NPMPackage{Name: name, Integrity: "sha512-" + base64.StdEncoding.EncodeToString(integrity[:])}
	p.Registry = Serve(t, func(r *Registry) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{
				"name": name, "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": name, "version": "1.0.0", "dist": map[string]string{
					"tarball":   r.URL + tarball,
					"shasum":    hex.EncodeToString(sha[:]),
					"integrity": p.Integrity,
				}}},
			})
		})
		mux.HandleFunc(tarball, func(w http.ResponseWriter, _ *http.Request) { w.Write(tgz.Bytes()) })
		return mux
	})
	p.Tarball = p.URL + tarball
	return p
}

// NPMCI is the setup command that installs package-lock.json's packages
// from registry into node_modules, changing no file of the tree.
func NPMCI(registry *Registry) string {
	return "npm ci --no-audit --no-fund --registry " + registry.URL + "/"
}
