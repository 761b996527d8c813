package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

func testCAPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress re-signing CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestSetupCABundleAddsTheOperatorsCA(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testCAPEM(t)
	file := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(file, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	path, err := setupCABundle("--setup-ca-file", file, dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), string(ca)) {
		t.Errorf("the bundle does not start with the operator's CA")
	}
	if roots := docker.SystemRoots(); len(got) != len(ca)+len(roots) {
		t.Errorf("bundle is %d bytes; want the CA (%d) and the host's roots (%d)", len(got), len(ca), len(roots))
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("bundle mode %v (%v); want 0644, readable by the sandbox user", fi.Mode(), err)
	}
}

func TestSetupCABundleRefusesWhatIsNotACertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("x")})
	tests := map[string]struct {
		data []byte
		want string
	}{
		"empty":    {nil, "holds no PEM certificate"},
		"a key":    {key, "holds a PRIVATE KEY block; only CERTIFICATE blocks belong in a CA bundle"},
		"garbage":  {[]byte("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"), "certificate 1: x509:"},
		"trailing": {append(testCAPEM(t), "junk"...), "has text after its last certificate that is not PEM"},
	}
	for name, tt := range tests {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".pem")
		if err := os.WriteFile(file, tt.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := setupCABundle("--setup-ca-file", file, dir); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", name, err, tt.want)
		}
	}
	if _, err := setupCABundle("--setup-ca-file", filepath.Join(dir, "missing.pem"), dir); err == nil || !strings.Contains(err.Error(), "--setup-ca-file") {
		t.Errorf("missing file: %v", err)
	}
}

// The server config's setup.ca_file is the flag's equivalent; naming a CA
// in both is refused rather than one of them silently not trusted.
func TestSetupCAFileFromTheServerConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testCAPEM(t)
	if err := os.WriteFile(filepath.Join(dir, "egress-ca.pem"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(config, []byte("setup: {ca_file: egress-ca.pem}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server, err := policy.LoadServerConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	cfg := workerConfig{dataDir: t.TempDir()}
	path, err := cfg.setupCABundle(server)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(got), string(ca)) {
		t.Errorf("bundle %s (%v) does not start with setup.ca_file's CA", path, err)
	}
	cfg.setupCA = filepath.Join(dir, "egress-ca.pem")
	if _, err := cfg.setupCABundle(server); err == nil || !strings.Contains(err.Error(), "both name the setup's CA; keep one") {
		t.Errorf("flag and setup.ca_file both set: %v; want a refusal", err)
	}
	if path, err := cfg.setupCABundle(policy.DefaultServerConfig()); err != nil || path == "" {
		t.Errorf("the flag alone: %q, %v", path, err)
	}
	cfg.setupCA = ""
	if path, err := cfg.setupCABundle(policy.DefaultServerConfig()); err != nil || path != "" {
		t.Errorf("neither: %q, %v; want no bundle", path, err)
	}
}

// Without --setup-ca-file, the bundle is the host's trust store: what
// agentbot run's setup trusts on a developer's machine.
func TestSetupCABundleWithoutAFileIsTheHostsStore(t *testing.T) {
	t.Parallel()
	roots := docker.SystemRoots()
	path, err := setupCABundle("", "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if roots == nil {
		if path != "" {
			t.Errorf("a host without a trust store got bundle %s; want none", path)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(roots) {
		t.Errorf("bundle is %d bytes (%v); want the host's %d bytes of roots", len(got), err, len(roots))
	}
}
