package docker

import "os"

// SystemRoots are the host's public CA certificates, from the first file
// found where distributions keep them (Debian and Ubuntu, Fedora and RHEL,
// openSUSE, Alpine), or nil: a CA bundle given to a container replaces its
// image's trust store, so a bundle of added CAs carries these too.
func SystemRoots() []byte {
	for _, p := range []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/ssl/cert.pem",
	} {
		if roots, err := os.ReadFile(p); err == nil {
			return roots
		}
	}
	return nil
}
