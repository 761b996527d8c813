package taskpage

import (
	"bytes"
	"regexp"
)

// credentials match what must never show on a public page even if a
// command printed it or the model wrote it: GitHub tokens, credentials in
// URLs and headers, and private keys. The sandbox holds none of them; this
// is the second line.
var credentials = []*regexp.Regexp{
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`(?i)\b(authorization|proxy-authorization)(\s*[:=]\s*)("?)[^\s"]+(\s+[^\s"]+)?`),
	regexp.MustCompile(`\b([a-z][a-z0-9+.-]*://)[^/\s:@]*:[^/\s@]+@`),
	regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`),
}

// replacements are what each of credentials becomes.
var replacements = []string{"[redacted]", "[redacted]", "${1}${2}${3}[redacted]", "${1}[redacted]@", "[private key redacted]"}

// Redact returns s with credentials masked, and every occurrence of
// secret (the server's own, which signs the pages' links).
func Redact(s string, secret []byte) string {
	if len(secret) > 0 && bytes.Contains([]byte(s), secret) {
		s = string(bytes.ReplaceAll([]byte(s), secret, []byte("[redacted]")))
	}
	for i, re := range credentials {
		s = re.ReplaceAllString(s, replacements[i])
	}
	return s
}
