// Package registrytest serves package registries for tests of prepared
// environments: a PyPI "simple" index of the wheels a test gives it and an
// npm registry with one package, on the Docker bridge's address, where
// setup containers (through the egress proxy) reach them, counting
// requests.
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
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
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

// A Dist is one release a PyPI index serves.
type Dist struct {
	Name, Version string
	Wheel         []byte
}

// file is the wheel's file name.
func (d Dist) file() string {
	return strings.ReplaceAll(d.Name, "-", "_") + "-" + d.Version + "-py3-none-any.whl"
}

// Module is package name 1.0, a pure-Python wheel whose __init__.py is
// module.
func Module(t testing.TB, name, module string) Dist {
	t.Helper()
	return WheelOf(t, name, "1.0", map[string][]byte{name + "/__init__.py": []byte(module)}, nil)
}

// WheelOf packs files into a pure-Python wheel of name version, whose
// dist-info holds info's files (entry_points.txt, say) beside the
// METADATA, WHEEL and RECORD it writes.
func WheelOf(t testing.TB, name, version string, files, info map[string][]byte) Dist {
	t.Helper()
	d := Dist{Name: name, Version: version}
	dir := strings.ReplaceAll(name, "-", "_") + "-" + version + ".dist-info/"
	all := maps.Clone(files)
	if all == nil {
		all = map[string][]byte{}
	}
	for f, data := range info {
		all[dir+f] = data
	}
	all[dir+"METADATA"] = []byte("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n")
	all[dir+"WHEEL"] = []byte("Wheel-Version: 1.0\nGenerator: registrytest\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
	var buf, record bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range slices.Sorted(maps.Keys(all)) {
		w, err := zw.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(all[f])
		sum := sha256.Sum256(all[f])
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f, base64.RawURLEncoding.EncodeToString(sum[:]), len(all[f]))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", dir)
	w, err := zw.Create(dir + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(record.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	d.Wheel = buf.Bytes()
	return d
}

// PyPI serves a "simple" index (under /simple/) holding dists.
func PyPI(t testing.TB, dists ...Dist) *Registry {
	t.Helper()
	return Serve(t, func(r *Registry) http.Handler {
		mux := http.NewServeMux()
		for _, d := range dists {
			mux.HandleFunc("/simple/"+strings.ToLower(d.Name)+"/", func(w http.ResponseWriter, _ *http.Request) {
				sum := sha256.Sum256(d.Wheel)
				fmt.Fprintf(w, `<html><body><a href="%s/files/%s#sha256=%s">%s</a></body></html>`, r.URL, d.file(), hex.EncodeToString(sum[:]), d.file())
			})
			mux.HandleFunc("/files/"+d.file(), func(w http.ResponseWriter, _ *http.Request) { w.Write(d.Wheel) })
		}
		return mux
	})
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
