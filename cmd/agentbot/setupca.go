package main

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// systemBundles are where distributions keep their public roots, first
// found first used: Debian and Ubuntu, Fedora and RHEL, openSUSE, Alpine.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// setupCABundle writes into dir the trust store of setup containers: the
// CA certificates of caFile (--setup-ca-file) followed by the host's
// public roots, so that the operator's CA adds to what TLS clients trust
// rather than replacing it. Without caFile it is the host's roots alone,
// which is what agentbot run gives setup: a developer's machine already
// trusts its network, re-signing proxy included. It returns the file's
// path, or "" when there is neither a caFile nor a host trust store (setup
// then trusts the image's own).
func setupCABundle(caFile, dir string) (string, error) {
	var bundle []byte
	if caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return "", fmt.Errorf("--setup-ca-file: %w", err)
		}
		if err := checkPEMCertificates(ca); err != nil {
			return "", fmt.Errorf("--setup-ca-file %s: %w", caFile, err)
		}
		bundle = append(bundle, ca...)
		if bundle[len(bundle)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	roots := hostRoots()
	if caFile == "" && roots == nil {
		return "", nil
	}
	bundle = append(bundle, roots...)
	path := filepath.Join(dir, "setup-ca-bundle.pem")
	// Read by the sandbox user inside the container; it holds no secret.
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		return "", fmt.Errorf("write the setup CA bundle: %w", err)
	}
	return path, nil
}

// hostRoots is the host's trust store: the first of systemBundles found,
// or nil.
func hostRoots() []byte {
	for _, p := range systemBundles {
		if roots, err := os.ReadFile(p); err == nil {
			return roots
		}
	}
	return nil
}

// checkPEMCertificates reports whether data is one or more PEM
// certificates and nothing else but whitespace.
func checkPEMCertificates(data []byte) error {
	n := 0
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a %s block; only CERTIFICATE blocks belong in a CA bundle", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("holds no PEM certificate")
	}
	for _, c := range data {
		if c != ' ' && c != '\n' && c != '\r' && c != '\t' {
			return errors.New("has text after its last certificate that is not PEM")
		}
	}
	return nil
}
