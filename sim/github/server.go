package github

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// AppName is the App's display name; its slug and bot login derive
	// from it. Default "agentbot-sim".
	AppName string
	// Dir holds the bare repositories. Default: a temporary directory
	// removed by Close.
	Dir string
	// Git is the git binary. Default: "git" from PATH.
	Git string
	// Logger receives one line per request. Default: discarded.
	Logger *slog.Logger
	// AppKey is the App's private key. Default: a new 2048-bit key, whose
	// generation is most of what starting a simulator costs; tests that
	// start many pass SharedKey().
	AppKey *rsa.PrivateKey
}

// SharedKey returns one App key per process, generated on first use.
var SharedKey = sync.OnceValue(func() *rsa.PrivateKey {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(fmt.Sprintf("githubsim: shared app key: %v", err))
	}
	return key
})

// App is the GitHub App the simulator owns, with the credentials GitHub
// would hand its owner.
type App struct {
	ID            int64
	Slug          string
	Name          string
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PrivateKeyPEM []byte
	// BotLogin is the user the App acts as: "<slug>[bot]".
	BotLogin string
	// Permissions and Events are what installations grant by default.
	Permissions map[string]string
	Events      []string
	// Owner is the account that owns the App.
	Owner       string
	Description string
	ExternalURL string
	// HookURL is the webhook URL from the manifest, if one was converted.
	HookURL string
}

// Server is a running simulator. Its methods are safe for concurrent use.
type Server struct {
	base   string // http://127.0.0.1:PORT, the "web" host
	api    string // base + /api/v3
	dir    string
	ownDir bool
	git    string
	log    *slog.Logger
	srv    *http.Server
	key    *rsa.PrivateKey
	booted time.Time

	mu             sync.Mutex
	app            App
	nextID         int64
	users          map[string]*user
	installs       map[int64]*installation
	repos          map[string]*repo // by lower-case "owner/name"
	tokens         map[string]*token
	comments       map[int64]*Comment
	reviewComments map[int64]*ReviewComment
	checkRuns      map[int64]*CheckRun
	ciRuns         []*CIRun // the repositories' CI, by other Apps
	manifestCodes  map[string]manifestCode
	faults         []*fault
	hookID         int64
	deliveries     []Delivery
	out            *outbox
	attachments    map[string][]byte // user attachments by asset id
}

const defaultAppName = "agentbot-sim"

// New starts a simulator on 127.0.0.1 with a fresh App.
func New(opts Options) (*Server, error) {
	s := &Server{
		dir:            opts.Dir,
		git:            opts.Git,
		log:            opts.Logger,
		booted:         now(),
		users:          map[string]*user{},
		installs:       map[int64]*installation{},
		repos:          map[string]*repo{},
		tokens:         map[string]*token{},
		comments:       map[int64]*Comment{},
		reviewComments: map[int64]*ReviewComment{},
		checkRuns:      map[int64]*CheckRun{},
		manifestCodes:  map[string]manifestCode{},
		nextID:         1000,
		out:            newOutbox(),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.git == "" {
		p, err := exec.LookPath("git")
		if err != nil {
			return nil, fmt.Errorf("githubsim: find git: %w", err)
		}
		s.git = p
	}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "githubsim-")
		if err != nil {
			return nil, fmt.Errorf("githubsim: repository dir: %w", err)
		}
		s.dir, s.ownDir = d, true
	}
	s.key = opts.AppKey
	if s.key == nil {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			s.removeDir()
			return nil, fmt.Errorf("githubsim: app key: %w", err)
		}
		s.key = key
	}
	name := opts.AppName
	if name == "" {
		name = defaultAppName
	}
	s.app = App{
		ID:            s.newID(),
		ClientID:      "Iv1." + randomHex(8),
		ClientSecret:  randomHex(20),
		Owner:         "agentbot",
		WebhookSecret: randomHex(20),
		PrivateKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(s.key)}),
		Permissions: map[string]string{
			"contents": "write", "issues": "write", "pull_requests": "write",
			"checks": "write", "metadata": "read", "actions": "read",
		},
		Events: []string{"issue_comment", "issues", "pull_request", "pull_request_review",
			"pull_request_review_comment", "installation", "installation_repositories"},
	}
	s.renameApp(name)
	s.hookID = s.newID()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("githubsim: listen: %w", err)
	}
	s.base = "http://" + ln.Addr().String()
	s.api = s.base + "/api/v3"
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go s.deliverQueued()
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("githubsim: serve", "err", err)
		}
	}()
	return s, nil
}

// renameApp sets the App's name and what derives from it. Callers hold
// s.mu or own s exclusively.
func (s *Server) renameApp(name string) {
	s.app.Name = name
	s.app.Slug = slugify(name)
	s.app.BotLogin = s.app.Slug + "[bot]"
	s.userLocked(s.app.BotLogin, "Bot")
}

// Close stops the server, sends the webhooks still queued, and removes
// the repositories it created.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// A connection a client dialled but never used counts as busy for
		// five seconds; past the grace period everything is closed.
		err = s.srv.Close()
	}
	s.closeOutbox()
	s.removeDir()
	return err
}

func (s *Server) removeDir() {
	if s.ownDir {
		if err := os.RemoveAll(s.dir); err != nil {
			s.log.Warn("githubsim: remove repositories", "dir", s.dir, "err", err)
		}
	}
}

// URL is the web host, e.g. http://127.0.0.1:PORT (GitHub Enterprise's
// https://HOST).
func (s *Server) URL() string { return s.base }

// APIURL is the REST base, http://127.0.0.1:PORT/api/v3.
func (s *Server) APIURL() string { return s.api }

// App returns the App's identity and credentials.
func (s *Server) App() App {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.app
	a.PrivateKeyPEM = append([]byte(nil), a.PrivateKeyPEM...)
	a.Events = append([]string(nil), a.Events...)
	a.Permissions = cloneMap(a.Permissions)
	return a
}

// newID hands out the next id; ids are unique across all kinds, as a
// reader of logs would want, though GitHub only promises per-kind.
// Callers hold s.mu or own s exclusively.
func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// gitHubTime is GitHub's timestamp format.
func gitHubTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// now is whole seconds, as GitHub's timestamps are.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return fmt.Sprintf("%x", b)
}

func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// obj is a JSON object as GitHub sends it: nullable fields are present
// with null, which go-github's omitempty structs could not express.
type obj = map[string]any

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	// An encoding error here means the client went away: nobody to tell.
	_ = json.NewEncoder(w).Encode(v)
}

const docsURL = "https://docs.github.com/rest"

// requestID is an X-GitHub-Request-Id, which GitHub's error messages
// quote.
func requestID() string {
	id := strings.ToUpper(randomHex(10))
	return id[:4] + ":" + id[4:8] + ":" + id[8:14] + ":" + id[14:]
}

// writeError answers with GitHub's basic-error body.
func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, obj{"message": message, "documentation_url": docsURL, "status": strconv.Itoa(status)})
}

// fieldError is one entry of a 422's "errors".
type fieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

// writeValidation answers 422 "Validation Failed" as GitHub does.
func writeValidation(w http.ResponseWriter, errs ...fieldError) {
	writeJSON(w, http.StatusUnprocessableEntity, obj{
		"message": "Validation Failed", "errors": errs,
		"documentation_url": docsURL, "status": "422",
	})
}

// decodeBody reads a JSON request body, answering 400 as GitHub does when
// it is not JSON.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 25<<20)).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return false
	}
	return true
}

// common sets the headers every GitHub API answer carries.
func (s *Server) common(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-GitHub-Request-Id", requestID())
		h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "4999")
		h.Set("X-RateLimit-Used", "1")
		h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
		next.ServeHTTP(w, r)
		s.log.Debug("githubsim", "method", r.Method, "path", r.URL.Path)
	})
}
