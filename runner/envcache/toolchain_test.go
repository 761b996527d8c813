package envcache_test

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
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/envcache"
	"github.com/agentbot/agentbot/runner/sandbox"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
)

// registry serves h on the Docker bridge's address, which setup
// containers reach, counting requests.
type registry struct {
	url      string
	requests atomic.Int64
}

func serveRegistry(t *testing.T, h func(r *registry) http.Handler) *registry {
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
		t.Fatal(err)
	}
	r := &registry{url: "http://" + ln.Addr().String()}
	inner := h(r)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		inner.ServeHTTP(w, req)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

// prepareAndRun builds an environment with setup on image, with network,
// then runs check in a network-less container over it and a fresh tree
// holding files, and returns the check's result.
func prepareAndRun(t *testing.T, image string, files map[string]string, setup, check string) sandbox.Result {
	t.Helper()
	d := sandboxtest.NewDriver(t)
	c, err := envcache.Open(t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	tree := func() string {
		dir := sandboxtest.WorkTree(t)
		for name, data := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o666); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(dir, name), sandbox.UID, sandbox.GID)
		}
		return dir
	}
	setupTree := tree()
	b, err := c.Build(envcache.Entry{Key: "00000000000000d0"}, setupTree)
	if err != nil {
		t.Fatal(err)
	}
	box := sandboxtest.Start(t, d, docker.Spec{Image: image, WorkTree: setupTree, Home: b.Home(), Network: true})
	run(t, box, envcache.SeedHome)
	run(t, box, setup)
	box.Close(t.Context())
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Release()
	ov, err := env.Overlays()
	if err != nil {
		t.Fatal(err)
	}
	agent := sandboxtest.Start(t, d, docker.Spec{Image: image, WorkTree: tree(), Overlays: ov})
	return sandboxtest.MustRun(t, agent, sandbox.Cmd{Shell: check, Timeout: 2 * time.Minute})
}

// wheel is a pure-Python wheel of package name 1.0 holding one module.
func wheel(t *testing.T, name, module string) []byte {
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
		w, _ := zw.Create(f[0])
		w.Write([]byte(f[1]))
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	w, _ := zw.Create(info + "RECORD")
	w.Write(record.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestPythonImageWithADependency: setup installs a package from a PyPI
// "simple" index into a virtualenv in the tree; pytest passes with no
// network, the virtualenv coming from the environment.
func TestPythonImageWithADependency(t *testing.T) {
	image := sandboxtest.ToolchainImage(t, "python")
	whl := wheel(t, "mathy", "def add(a, b):\n    return a + b\n")
	index := serveRegistry(t, func(r *registry) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("/simple/mathy/", func(w http.ResponseWriter, _ *http.Request) {
			sum := sha256.Sum256(whl)
			fmt.Fprintf(w, `<html><body><a href="%s/files/mathy-1.0-py3-none-any.whl#sha256=%s">mathy-1.0-py3-none-any.whl</a></body></html>`,
				r.url, hex.EncodeToString(sum[:]))
		})
		mux.HandleFunc("/files/mathy-1.0-py3-none-any.whl", func(w http.ResponseWriter, _ *http.Request) { w.Write(whl) })
		return mux
	})
	res := prepareAndRun(t, image, map[string]string{
		"requirements.txt": "mathy==1.0\n",
		"test_add.py":      "import mathy\n\ndef test_add():\n    assert mathy.add(2, 3) == 5\n",
	}, "python3 -m venv --system-site-packages .venv && .venv/bin/pip install -q --trusted-host "+strings.TrimPrefix(index.url, "http://")+" --index-url "+index.url+"/simple/ -r requirements.txt",
		".venv/bin/python -m pytest -q -p no:cacheprovider")
	if res.ExitCode != 0 {
		t.Fatalf("pytest: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if index.requests.Load() == 0 {
		t.Fatal("setup never asked the index")
	}
}

// TestNodeImageWithADependency: setup installs a package from an npm
// registry into node_modules; npm test passes with no network.
func TestNodeImageWithADependency(t *testing.T) {
	image := sandboxtest.ToolchainImage(t, "node")
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, data := range map[string]string{
		"package/package.json": `{"name":"padx","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = (s, n) => s.padStart(n, '*');\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write([]byte(data))
	}
	tw.Close()
	gz.Close()
	sha := sha1.Sum(tgz.Bytes())
	integrity := sha512.Sum512(tgz.Bytes())
	npm := serveRegistry(t, func(r *registry) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("/padx", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{
				"name": "padx", "dist-tags": map[string]string{"latest": "1.0.0"},
				"versions": map[string]any{"1.0.0": map[string]any{"name": "padx", "version": "1.0.0", "dist": map[string]string{
					"tarball":   r.url + "/padx/-/padx-1.0.0.tgz",
					"shasum":    hex.EncodeToString(sha[:]),
					"integrity": "sha512-" + base64.StdEncoding.EncodeToString(integrity[:]),
				}}},
			})
		})
		mux.HandleFunc("/padx/-/padx-1.0.0.tgz", func(w http.ResponseWriter, _ *http.Request) { w.Write(tgz.Bytes()) })
		return mux
	})
	res := prepareAndRun(t, image, map[string]string{
		"package.json": `{"name":"app","version":"1.0.0","scripts":{"test":"node test.js"},"dependencies":{"padx":"1.0.0"}}`,
		"test.js":      "const pad = require('padx');\nif (pad('7', 3) !== '**7') { console.error('bad pad'); process.exit(1); }\nconsole.log('ok');\n",
	}, "npm install --no-audit --no-fund --registry "+npm.url+"/", "npm test")
	if res.ExitCode != 0 {
		t.Fatalf("npm test: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	if npm.requests.Load() == 0 {
		t.Fatal("setup never asked the registry")
	}
}
