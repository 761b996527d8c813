package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

const signaturePrefix = "sha256="

// Sign returns the X-Hub-Signature-256 value GitHub sends for body.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return signaturePrefix + hex.EncodeToString(mac.Sum(nil))
}

// ValidSignature reports whether header, an X-Hub-Signature-256 value, signs
// body with one of secrets (several while a secret is being rotated). Every
// secret is tried, and compared in constant time, so the answer's timing
// tells nothing about the signature or which secret matched.
func ValidSignature(secrets [][]byte, body []byte, header string) bool {
	hexSum, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	valid := false
	for _, s := range secrets {
		mac := hmac.New(sha256.New, s)
		mac.Write(body)
		if hmac.Equal(mac.Sum(nil), got) {
			valid = true
		}
	}
	return valid
}
