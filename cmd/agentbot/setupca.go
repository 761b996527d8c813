package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/runner/sandbox/docker"
)

// setupCAFile is the CA file setup containers trust, named by the
// --setup-ca-file flag or the server config's setup.ca_file, with the name
// of where it came from for errors; "" with neither. Both set is an error:
// one CA silently not trusted would show only as a certificate error in
// some setup.
func setupCAFile(flag string, server policy.ServerConfig) (source, file string, err error) {
	switch {
	case flag != "" && server.SetupCAFile != "":
		return "", "", fmt.Errorf("--setup-ca-file %s and setup.ca_file %s of %s both name the setup's CA; keep one", flag, server.SetupCAFile, server.Source)
	case flag != "":
		return "--setup-ca-file", flag, nil
	case server.SetupCAFile != "":
		return "setup.ca_file of " + server.Source, server.SetupCAFile, nil
	}
	return "", "", nil
}

// setupCABundle writes into dir the trust store of setup containers: the
// CA certificates of caFile followed by the host's public roots, so that
// the operator's CA adds to what TLS clients trust rather than replacing
// it. Without caFile it is the host's roots alone, which is what agentbot
// run gives setup: a developer's machine already trusts its network,
// re-signing proxy included. It returns the file's path, or "" when there
// is neither a caFile nor a host trust store (setup then trusts the
// image's own). source names caFile in errors.
func setupCABundle(source, caFile, dir string) (string, error) {
	var bundle []byte
	if caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return "", fmt.Errorf("%s: %w", source, err)
		}
		if err := policy.CheckPEMCertificates(ca); err != nil {
			return "", fmt.Errorf("%s %s: %w", source, caFile, err)
		}
		bundle = append(bundle, ca...)
		if bundle[len(bundle)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	roots := docker.SystemRoots()
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
