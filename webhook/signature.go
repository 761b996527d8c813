package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
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
	v, ok := newVerifier(secrets, header)
	if !ok {
		return false
	}
	v.Write(body)
	return v.valid()
}

// verifier checks a signature on a body written to it piece by piece, as
// the body streams in, so that checking costs no copy of the body.
type verifier struct {
	want []byte      // the signature's HMAC
	macs []hash.Hash // one per secret
}

// newVerifier parses header; ok is false when it is not a well-formed
// X-Hub-Signature-256 value, which no body can satisfy.
func newVerifier(secrets [][]byte, header string) (v *verifier, ok bool) {
	hexSum, ok := strings.CutPrefix(header, signaturePrefix)
	if !ok {
		return nil, false
	}
	want, err := hex.DecodeString(hexSum)
	if err != nil || len(want) != sha256.Size {
		return nil, false
	}
	v = &verifier{want: want}
	for _, s := range secrets {
		v.macs = append(v.macs, hmac.New(sha256.New, s))
	}
	return v, true
}

// Write adds p to every secret's HMAC; it never fails.
func (v *verifier) Write(p []byte) (int, error) {
	for _, m := range v.macs {
		m.Write(p)
	}
	return len(p), nil
}

// valid reports whether what was written is signed by one of the secrets.
func (v *verifier) valid() bool {
	valid := false
	for _, m := range v.macs {
		if hmac.Equal(m.Sum(nil), v.want) {
			valid = true
		}
	}
	return valid
}
