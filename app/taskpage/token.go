package taskpage

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentbot/agentbot/app"
)

// MinSecretBytes is the shortest server secret a Signer takes: shorter
// ones could be guessed from the links they sign.
const MinSecretBytes = 32

// Prefix is where the pages are served: Prefix + "{task}/{token}".
const Prefix = "/live/"

// Signer makes and checks the tokens of task pages: the HMAC-SHA256, under
// the server's secret, of the task's id and the token's expiry. A token
// names one task, ends on its own, and every token ends together when the
// secret is rotated.
type Signer struct {
	secret []byte
}

// NewSigner returns the signer with secret, or an *app.Error when it is
// shorter than MinSecretBytes.
func NewSigner(secret []byte) (*Signer, error) {
	if len(secret) < MinSecretBytes {
		return nil, app.Errorf(app.EInvalid, "The task page secret has %d bytes; it needs at least %d (openssl rand -hex 32 makes one).", len(secret), MinSecretBytes)
	}
	return &Signer{secret: secret}, nil
}

// Token returns the token of task id's page, valid until expires.
func (s *Signer) Token(id string, expires time.Time) string {
	exp := strconv.FormatInt(expires.Unix(), 36)
	return exp + "." + base64.RawURLEncoding.EncodeToString(s.mac(id, exp))
}

// Valid reports whether token is a token of task id's page, unexpired at
// now. The MAC is compared in constant time.
func (s *Signer) Valid(id, token string, now time.Time) bool {
	exp, sum, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	unix, err := strconv.ParseInt(exp, 36, 64)
	if err != nil || strconv.FormatInt(unix, 36) != exp {
		return false // one expiry, one spelling
	}
	got, err := base64.RawURLEncoding.DecodeString(sum)
	if err != nil {
		return false
	}
	// The MAC first, so that how long the answer takes says nothing of
	// whether the token merely expired.
	return hmac.Equal(got, s.mac(id, exp)) && now.Before(time.Unix(unix, 0))
}

// mac binds the id and the expiry, each length-prefixed so that no two
// pairs sign the same bytes.
func (s *Signer) mac(id, exp string) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte("agentbot task page\x00"))
	m.Write([]byte(strconv.Itoa(len(id)) + ":" + id))
	m.Write([]byte(strconv.Itoa(len(exp)) + ":" + exp))
	return m.Sum(nil)
}

// Links makes the public links of task pages: Base (the intake's public
// address) and a token valid for TTL (the trace's retention) from the
// task's arrival, so that the link ends with what it shows.
type Links struct {
	Base   string
	Signer *Signer
	TTL    time.Duration
}

// ParseBase checks the intake's public address: an absolute http or https
// URL with no query or fragment. It returns it without a trailing slash.
func ParseBase(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", app.Errorf(app.EInvalid, "The public URL %q is not an http or https address without query, fragment or credentials, such as https://agentbot.example.com.", raw)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// URL returns the link to t's page.
func (l Links) URL(t app.Task) string {
	from := t.ReceivedAt
	if from.IsZero() {
		from = time.Now()
	}
	return l.Base + Path(t.ID, l.Signer.Token(t.ID, from.Add(l.TTL)))
}

// Path is the path of task id's page under token.
func Path(id, token string) string {
	return Prefix + url.PathEscape(id) + "/" + token
}
