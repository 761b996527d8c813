package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
)

// postManifest submits the manifest form as a browser would and returns
// the answer without following the redirect.
func postManifest(t *testing.T, w *world, path, manifest, state string) *http.Response {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.PostForm(w.s.URL()+path+"?state="+url.QueryEscape(state), url.Values{"manifest": {manifest}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestManifestFlow(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	m, err := json.Marshal(map[string]any{
		"name": "Agent Bot", "url": "https://example.com/agentbot",
		"hook_attributes":     map[string]any{"url": "https://example.com/webhook"},
		"redirect_url":        "http://127.0.0.1:9/callback?x=1",
		"public":              false,
		"default_permissions": map[string]string{"contents": "write", "issues": "write", "checks": "write", "pull_requests": "write"},
		"default_events":      []string{"issue_comment", "pull_request"},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := postManifest(t, w, "/organizations/acme/settings/apps/new", string(m), "s3cr3t")
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("form answer %d, want 302", resp.StatusCode)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	code := loc.Query().Get("code")
	if loc.Host != "127.0.0.1:9" || loc.Path != "/callback" || loc.Query().Get("state") != "s3cr3t" || loc.Query().Get("x") != "1" || code == "" {
		t.Fatalf("redirected to %s", loc)
	}

	c := newClient(t, w.s, http.DefaultTransport)
	cfg, _, err := c.Apps.CompleteAppManifest(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	app := w.s.App()
	if cfg.GetID() != app.ID || cfg.GetSlug() != "agent-bot" || cfg.GetPEM() != string(app.PrivateKeyPEM) ||
		cfg.GetWebhookSecret() != app.WebhookSecret || cfg.GetClientSecret() != app.ClientSecret ||
		cfg.GetOwner().GetLogin() != "acme" || app.HookURL != "https://example.com/webhook" || app.BotLogin != "agent-bot[bot]" {
		t.Errorf("conversion %+v, app %+v", cfg, app)
	}
	if _, resp, err := c.Apps.CompleteAppManifest(ctx, code); resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("second conversion of one code: %v, want 404", err)
	}

	// The converted credentials work.
	itr, err := ghinstallation.New(http.DefaultTransport, cfg.GetID(), w.install, []byte(cfg.GetPEM()))
	if err != nil {
		t.Fatal(err)
	}
	itr.BaseURL = w.s.APIURL()
	tok, err := itr.Token(ctx)
	if err != nil || !strings.HasPrefix(tok, "ghs_") {
		t.Errorf("token with converted key: %q, %v", tok, err)
	}
}

func TestManifestFormRefusesBadManifests(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for name, m := range map[string]string{
		"not JSON":        "{",
		"no redirect_url": `{"name":"x","url":"https://example.com"}`,
		"no name":         `{"url":"https://example.com","redirect_url":"https://example.com/cb"}`,
	} {
		if resp := postManifest(t, w, "/settings/apps/new", m, "s"); resp.StatusCode < 400 {
			t.Errorf("%s: answer %d, want a refusal", name, resp.StatusCode)
		}
	}
}
