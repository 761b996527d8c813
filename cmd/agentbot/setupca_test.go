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
	path, err := setupCABundle(file, dir)
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
	for _, p := range systemBundles {
		if roots, err := os.ReadFile(p); err == nil {
			if len(got) != len(ca)+len(roots) {
				t.Errorf("bundle is %d bytes; want the CA (%d) and the host's roots from %s (%d)", len(got), len(ca), p, len(roots))
			}
			break
		}
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
		if _, err := setupCABundle(file, dir); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v; want %q", name, err, tt.want)
		}
	}
	if _, err := setupCABundle(filepath.Join(dir, "missing.pem"), dir); err == nil || !strings.Contains(err.Error(), "--setup-ca-file") {
		t.Errorf("missing file: %v", err)
	}
}

// Without --setup-ca-file, the bundle is the host's trust store: what
// agentbot run's setup trusts on a developer's machine.
func TestSetupCABundleWithoutAFileIsTheHostsStore(t *testing.T) {
	t.Parallel()
	roots := hostRoots()
	path, err := setupCABundle("", t.TempDir())
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
