package policy

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// CheckCAFile reports whether the file at path is a CA bundle setup
// containers may trust: one or more PEM certificates and nothing else.
func CheckCAFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return CheckPEMCertificates(data)
}

// CheckPEMCertificates reports whether data is one or more PEM
// certificates and nothing else but whitespace.
func CheckPEMCertificates(data []byte) error {
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
