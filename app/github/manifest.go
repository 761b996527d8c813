package github

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// Manifest is a GitHub App manifest, as app.yml holds it and as GitHub's
// manifest flow takes it (JSON, same keys).
type Manifest struct {
	Name               string            `yaml:"name" json:"name"`
	URL                string            `yaml:"url" json:"url"`
	Description        string            `yaml:"description,omitempty" json:"description,omitempty"`
	Public             bool              `yaml:"public" json:"public"`
	HookAttributes     HookAttributes    `yaml:"hook_attributes" json:"hook_attributes"`
	RedirectURL        string            `yaml:"redirect_url" json:"redirect_url"`
	CallbackURLs       []string          `yaml:"callback_urls,omitempty" json:"callback_urls,omitempty"`
	SetupURL           string            `yaml:"setup_url,omitempty" json:"setup_url,omitempty"`
	DefaultPermissions map[string]string `yaml:"default_permissions" json:"default_permissions"`
	DefaultEvents      []string          `yaml:"default_events" json:"default_events"`
}

// HookAttributes says where GitHub delivers the App's webhooks.
type HookAttributes struct {
	URL    string `yaml:"url" json:"url"`
	Active bool   `yaml:"active" json:"active"`
}

// ParseManifest reads an app.yml. Unknown keys are errors, so that a typo
// does not silently register an App without the setting.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("app manifest: %w", err)
	}
	if m.Name == "" || m.URL == "" {
		return Manifest{}, fmt.Errorf("app manifest: name and url are required")
	}
	return m, nil
}

// AppCredentials are what GitHub returns for an App created from a
// manifest. ClientSecret, WebhookSecret and PEM are secrets.
type AppCredentials struct {
	ID            int64
	Slug          string
	HTMLURL       string
	ClientID      string
	ClientSecret  string
	WebhookSecret string
	PEM           string
}

// ManifestFlow is the local side of GitHub's manifest flow
// (https://docs.github.com/en/apps/sharing-github-apps/registering-a-github-app-from-a-manifest):
// its page posts the manifest to GitHub with a random state; GitHub creates
// the App once the user confirms and redirects the browser to the
// callback with a one-time code and the state; the callback checks the
// state and converts the code into the App's credentials.
type ManifestFlow struct {
	manifest  Manifest
	newAppURL string
	apiURL    string
	state     string
	client    *http.Client

	once  sync.Once
	done  chan struct{}
	creds AppCredentials // written once, before done is closed
	err   error
}

// NewManifestFlow prepares the flow for the GitHub whose REST root is
// apiURL, registering the App under org when org is not empty and under the
// user otherwise. baseURL is where the returned handler is served; the
// manifest's redirect_url is set to its /callback.
func NewManifestFlow(m Manifest, apiURL, org, baseURL string, rt http.RoundTripper) (*ManifestFlow, error) {
	apiURL = strings.TrimRight(apiURL, "/")
	web, err := WebURL(apiURL)
	if err != nil {
		return nil, err
	}
	newApp := web + "/settings/apps/new"
	if org != "" {
		newApp = web + "/organizations/" + url.PathEscape(org) + "/settings/apps/new"
	}
	var b [16]byte
	rand.Read(b[:])
	state := hex.EncodeToString(b[:])
	m.RedirectURL = strings.TrimRight(baseURL, "/") + "/callback"
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &ManifestFlow{
		manifest:  m,
		newAppURL: newApp + "?state=" + state,
		apiURL:    apiURL,
		state:     state,
		client:    &http.Client{Transport: newRetryTransport(rt, RetryPolicy{})},
		done:      make(chan struct{}),
	}, nil
}

var manifestPage = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>Register agentbot</title></head>
<body>
<h1>Register the GitHub App {{.Name}}</h1>
<p>This form sends the App's manifest to GitHub, which asks you to confirm and
then sends you back here.</p>
<form id="manifest" method="post" action="{{.Action}}">
<input type="hidden" name="manifest" value="{{.Manifest}}">
<button type="submit">Create the App on GitHub</button>
</form>
</body></html>
`))

// ServeHTTP serves the flow's page at / and GitHub's redirect at /callback.
func (f *ManifestFlow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/":
		js, err := json.Marshal(f.manifest)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		manifestPage.Execute(w, map[string]string{"Name": f.manifest.Name, "Action": f.newAppURL, "Manifest": string(js)})
	case "/callback":
		f.callback(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (f *ManifestFlow) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// A request whose state is not ours did not come from the flow we
	// started (a forged or stale link): refuse it and keep waiting.
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.state)) != 1 {
		http.Error(w, "This link does not belong to the registration in progress (state mismatch).", http.StatusBadRequest)
		return
	}
	code := q.Get("code")
	if code == "" {
		http.Error(w, "GitHub sent no code.", http.StatusBadRequest)
		return
	}
	first := false
	f.once.Do(func() {
		first = true
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		f.creds, f.err = f.convert(ctx, code)
		close(f.done)
	})
	if !first {
		http.Error(w, "This registration is already finished.", http.StatusGone)
		return
	}
	if f.err != nil {
		http.Error(w, "Registering the App failed; see the terminal.", http.StatusBadGateway)
		return
	}
	fmt.Fprintf(w, "The App %s is registered. You can close this tab and return to the terminal.\n", f.creds.Slug)
}

// convert exchanges the one-time code for the App's credentials.
func (f *ManifestFlow) convert(ctx context.Context, code string) (AppCredentials, error) {
	gh, err := apiClient(f.apiURL, f.client.Transport)
	if err != nil {
		return AppCredentials{}, err
	}
	cfg, _, err := gh.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		return AppCredentials{}, fmt.Errorf("convert manifest code: %w", err)
	}
	return AppCredentials{
		ID:            cfg.GetID(),
		Slug:          cfg.GetSlug(),
		HTMLURL:       cfg.GetHTMLURL(),
		ClientID:      cfg.GetClientID(),
		ClientSecret:  cfg.GetClientSecret(),
		WebhookSecret: cfg.GetWebhookSecret(),
		PEM:           cfg.GetPEM(),
	}, nil
}

// Wait returns the new App's credentials once GitHub's redirect came back
// and its code was converted.
func (f *ManifestFlow) Wait(ctx context.Context) (AppCredentials, error) {
	select {
	case <-ctx.Done():
		return AppCredentials{}, fmt.Errorf("waiting for GitHub's redirect: %w", ctx.Err())
	case <-f.done:
		return f.creds, f.err
	}
}
