package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// setupCABundle writes into dir the trust store of setup containers for
// --setup-ca-file: the operator's CA certificates followed by the host's
// public roots, so that the operator's CA adds to what TLS clients trust
// rather than replacing it. It returns the file's path.
func setupCABundle(caFile, dir string) (string, error) {
	return writeSetupCABundle("--setup-ca-file", caFile, dir)
}

// writeSetupCABundle is setupCABundle for a CA file named by source (the
// flag, or the server config's setup.ca_file) in its errors.
func writeSetupCABundle(source, caFile, dir string) (string, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return "", fmt.Errorf("%s: %w", source, err)
	}
	if err := app.CheckPEMCertificates(ca); err != nil {
		return "", fmt.Errorf("%s %s: %w", source, caFile, err)
	}
	bundle := append([]byte(nil), ca...)
	if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
		bundle = append(bundle, '\n')
	}
	bundle = append(bundle, docker.SystemRoots()...)
	path := filepath.Join(dir, "setup-ca-bundle.pem")
	// Read by the sandbox user inside the container; it holds no secret.
	if err := os.WriteFile(path, bundle, 0o644); err != nil {
		return "", fmt.Errorf("write the setup CA bundle: %w", err)
	}
	return path, nil
}
