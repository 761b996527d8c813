package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

// appRequest asks for an installation token with a JWT made from claims
// and key, and returns the answer's status.
func appRequest(t *testing.T, w *world, key *rsa.PrivateKey, method jwt.SigningMethod, claims jwt.RegisteredClaims) int {
	t.Helper()
	signed, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/app/installations/%d/access_tokens", w.s.APIURL(), w.install), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAppJWT(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	app := w.s.App()
	block, _ := pem.Decode(app.PrivateKeyPEM)
	appKey, err := x509.ParsePKCS1PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) *jwt.NumericDate { return jwt.NewNumericDate(time.Now().Add(d)) }
	iss := fmt.Sprint(app.ID)
	tests := []struct {
		name   string
		key    *rsa.PrivateKey
		claims jwt.RegisteredClaims
		want   int
	}{
		{"valid", appKey, jwt.RegisteredClaims{Issuer: iss, IssuedAt: at(-30 * time.Second), ExpiresAt: at(2 * time.Minute)}, http.StatusCreated},
		{"issuer is the client id", appKey, jwt.RegisteredClaims{Issuer: app.ClientID, IssuedAt: at(-30 * time.Second), ExpiresAt: at(2 * time.Minute)}, http.StatusCreated},
		{"signed by another key", otherKey, jwt.RegisteredClaims{Issuer: iss, IssuedAt: at(-30 * time.Second), ExpiresAt: at(2 * time.Minute)}, http.StatusUnauthorized},
		{"expired", appKey, jwt.RegisteredClaims{Issuer: iss, IssuedAt: at(-20 * time.Minute), ExpiresAt: at(-10 * time.Minute)}, http.StatusUnauthorized},
		{"expiry too far ahead", appKey, jwt.RegisteredClaims{Issuer: iss, IssuedAt: at(-30 * time.Second), ExpiresAt: at(time.Hour)}, http.StatusUnauthorized},
		{"issued in the future", appKey, jwt.RegisteredClaims{Issuer: iss, IssuedAt: at(5 * time.Minute), ExpiresAt: at(8 * time.Minute)}, http.StatusUnauthorized},
		{"another app", appKey, jwt.RegisteredClaims{Issuer: "1", IssuedAt: at(-30 * time.Second), ExpiresAt: at(2 * time.Minute)}, http.StatusUnauthorized},
		{"no issued-at", appKey, jwt.RegisteredClaims{Issuer: iss, ExpiresAt: at(2 * time.Minute)}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := appRequest(t, w, tt.key, jwt.SigningMethodRS256, tt.claims); got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
	t.Run("HS256 with the public key as secret", func(t *testing.T) {
		der, err := x509.MarshalPKIXPublicKey(&appKey.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Issuer: iss, IssuedAt: at(0), ExpiresAt: at(time.Minute)}).SignedString(der)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, w.s.APIURL()+"/app", nil)
		req.Header.Set("Authorization", "Bearer "+signed)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("status %d, want 401", resp.StatusCode)
		}
	})
}

func TestInstallationTokenRequests(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tests := []struct {
		name string
		opts *github.InstallationTokenOptions
		ok   bool
	}{
		{"everything", nil, true},
		{"one repository by name", &github.InstallationTokenOptions{Repositories: []string{name}}, true},
		{"unknown repository", &github.InstallationTokenOptions{Repositories: []string{"ghost"}}, false},
		{"permission the app lacks", &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Administration: github.String("write")}}, false},
		{"workflows the app lacks", &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Workflows: github.String("write")}}, false},
		{"narrower permission", &github.InstallationTokenOptions{Permissions: &github.InstallationPermissions{Contents: github.String("read")}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := w.transport(t, nil, tt.opts).Token(context.Background())
			if (err == nil) != tt.ok {
				t.Errorf("token error %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestTokenScopeREST(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	scoped := w.client(t, nil, &github.InstallationTokenOptions{
		Repositories: []string{name},
		Permissions:  &github.InstallationPermissions{Contents: github.String("read"), Issues: github.String("read")},
	})
	if _, _, err := scoped.Repositories.Get(ctx, owner, name); err != nil {
		t.Fatalf("scoped repository: %v", err)
	}
	_, resp, err := scoped.Repositories.Get(ctx, owner, "other")
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("other repository: %v, want 404", err)
	}
	_, _, resp, err = scoped.Repositories.GetContents(ctx, owner, "other", "README.md", nil)
	if resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("contents of other repository: %v, want 404", err)
	}
	issue, err := w.s.AddIssue(full, "octocat", "t", "b")
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err = scoped.Issues.CreateComment(ctx, owner, name, issue, &github.IssueComment{Body: github.String("hi")})
	if resp == nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(err.Error(), "Resource not accessible by integration") {
		t.Errorf("comment with issues: read: %v, want 403", err)
	} else if got := resp.Header.Get("X-Accepted-GitHub-Permissions"); got != "issues=write; pull_requests=write" {
		t.Errorf("X-Accepted-GitHub-Permissions %q", got)
	}
	if got := w.s.Comments(full, issue); len(got) != 0 {
		t.Errorf("refused comment was stored: %+v", got)
	}
	_, _, err = scoped.Checks.CreateCheckRun(ctx, owner, name, github.CreateCheckRunOptions{Name: "x", HeadSHA: "main"})
	if err == nil {
		t.Error("check run created without checks permission")
	}

	bad := newClient(t, w.s, tokenTransport("ghs_forged"))
	_, resp, err = bad.Repositories.Get(ctx, owner, name)
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged token: %v, want 401", err)
	}
}

// tokenTransport authenticates with a fixed token.
type tokenTransport string

func (tok tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "token "+string(tok))
	return http.DefaultTransport.RoundTrip(r)
}

func TestTokenScopeGit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	onlyWidgets := w.token(t, &github.InstallationTokenOptions{Repositories: []string{name}})
	readOnly := w.token(t, &github.InstallationTokenOptions{
		Repositories: []string{name},
		Permissions:  &github.InstallationPermissions{Contents: github.String("read")},
	})
	dir := t.TempDir()
	clone := func(repo, url string) (string, string, error) {
		d := filepath.Join(dir, fmt.Sprintf("c%d", time.Now().UnixNano()))
		out, err := git("", "clone", "--quiet", url, d)
		return d, out, err
	}

	if _, out, err := clone(full, w.cloneURL(full, onlyWidgets)); err != nil {
		t.Fatalf("clone with a token for the repository: %v\n%s", err, out)
	}
	if _, out, err := clone(owner+"/other", w.cloneURL(owner+"/other", onlyWidgets)); err == nil {
		t.Errorf("cloned acme/other with a token scoped to widgets:\n%s", out)
	}
	if _, out, err := clone(full, w.s.URL()+"/"+full+".git"); err == nil {
		t.Errorf("cloned without a token:\n%s", out)
	}
	if _, out, err := clone(full, w.cloneURL(full, "ghs_forged")); err == nil {
		t.Errorf("cloned with a forged token:\n%s", out)
	}

	// A bearer header, as a workspace may pass through http.extraHeader.
	d := filepath.Join(dir, "bearer")
	if out, err := git("", "-c", "http.extraHeader=Authorization: Bearer "+onlyWidgets, "clone", "--quiet", w.s.URL()+"/"+full+".git", d); err != nil {
		t.Fatalf("clone with a bearer header: %v\n%s", err, out)
	}

	// Push: the read-only token is refused, the full one lands the branch.
	work, out, err := clone(full, w.cloneURL(full, readOnly))
	if err != nil {
		t.Fatalf("clone read-only: %v\n%s", err, out)
	}
	mustGit(t, work, "checkout", "--quiet", "-b", "topic")
	mustGit(t, work, "commit", "--quiet", "--allow-empty", "-m", "topic")
	if out, err := git(work, "push", "--quiet", "origin", "topic"); err == nil {
		t.Errorf("pushed with contents: read:\n%s", out)
	}
	if _, err := w.s.BranchSHA(full, "topic"); err == nil {
		t.Error("refused push created the branch")
	}
	mustGit(t, work, "remote", "set-url", "origin", w.cloneURL(full, onlyWidgets))
	mustGit(t, work, "push", "--quiet", "origin", "topic")
	got := w.mustBranchSHA(t, "topic")
	if want := strings.TrimSpace(mustGit(t, work, "rev-parse", "HEAD")); got != want {
		t.Errorf("branch topic at %s, pushed %s", got, want)
	}
}

func TestExpiredTokensAreRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	c := w.client(t, nil, nil)
	tok := w.token(t, nil)
	if _, _, err := c.Repositories.Get(ctx, owner, name); err != nil {
		t.Fatal(err)
	}
	w.s.ExpireTokens()
	if _, resp, err := c.Repositories.Get(ctx, owner, name); resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired token on REST: %v, want 401", err)
	}
	if out, err := git("", "clone", "--quiet", w.cloneURL(full, tok), filepath.Join(t.TempDir(), "c")); err == nil {
		t.Errorf("cloned with an expired token:\n%s", out)
	}
	if _, _, err := w.client(t, nil, nil).Repositories.Get(ctx, owner, name); err != nil {
		t.Errorf("fresh token after expiry: %v", err)
	}
}

func TestAppRoutes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	app := w.s.App()
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, app.ID, app.PrivateKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	atr.BaseURL = w.s.APIURL()
	c := newClient(t, w.s, atr)
	got, _, err := c.Apps.Get(ctx, "")
	if err != nil || got.GetID() != app.ID || got.GetSlug() != app.Slug {
		t.Errorf("app %+v (%v)", got, err)
	}
	in, _, err := c.Apps.FindRepositoryInstallation(ctx, owner, name)
	if err != nil || in.GetID() != w.install || in.GetAccount().GetLogin() != owner {
		t.Errorf("repository installation %+v (%v)", in, err)
	}
	if _, resp, err := c.Apps.GetInstallation(ctx, 424242); resp == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown installation: %v, want 404", err)
	}
	tok, _, err := c.Apps.CreateInstallationToken(ctx, w.install, &github.InstallationTokenOptions{RepositoryIDs: []int64{mustRepoID(t, w)}})
	if err != nil || len(tok.Repositories) != 1 || tok.Repositories[0].GetFullName() != full {
		t.Errorf("token %+v (%v)", tok, err)
	}
	// An installation token is no App JWT.
	if _, resp, err := w.client(t, nil, nil).Apps.Get(ctx, ""); resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /app with an installation token: %v, want 401", err)
	}
}

func mustRepoID(t *testing.T, w *world) int64 {
	t.Helper()
	r, _, err := w.client(t, nil, nil).Repositories.Get(context.Background(), owner, name)
	if err != nil {
		t.Fatal(err)
	}
	return r.GetID()
}

// GitHub refuses an App's push that touches a workflow file unless the
// App holds the workflows permission, which agentbot's does not.
func TestPushOfWorkflowNeedsWorkflowsPermission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := filepath.Join(t.TempDir(), "c")
	mustGit(t, "", "clone", "--quiet", w.cloneURL(full, w.token(t, nil)), dir)
	mustGit(t, dir, "checkout", "--quiet", "-b", "agent/ci")
	if err := os.MkdirAll(filepath.Join(dir, ".github", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".github", "workflows", "ci.yml"), []byte("on: push\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustGit(t, dir, "add", "--all")
	mustGit(t, dir, "commit", "--quiet", "-m", "add ci")
	out, err := git(dir, "push", "origin", "agent/ci")
	if err == nil || !strings.Contains(out, "refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission") {
		t.Errorf("push of a workflow: %v\n%s", err, out)
	}
	if _, err := w.s.BranchSHA(full, "agent/ci"); err == nil {
		t.Error("refused push created the branch")
	}
	// The same branch without the workflow commit goes through.
	mustGit(t, dir, "checkout", "--quiet", "-b", "agent/no-ci", "origin/main")
	mustGit(t, dir, "commit", "--quiet", "--allow-empty", "-m", "no ci")
	mustGit(t, dir, "push", "--quiet", "origin", "agent/no-ci")

	// An App registered with workflows: write may push it.
	m := `{"name":"ci-bot","url":"https://example.com","redirect_url":"https://example.com/cb",
		"default_permissions":{"contents":"write","workflows":"write"}}`
	loc, err := postManifest(t, w, "/settings/apps/new", m, "s").Location()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := newClient(t, w.s, http.DefaultTransport).Apps.CompleteAppManifest(context.Background(), loc.Query().Get("code")); err != nil {
		t.Fatal(err)
	}
	mustGit(t, dir, "remote", "set-url", "origin", w.cloneURL(full, w.token(t, nil)))
	mustGit(t, dir, "push", "--quiet", "origin", "agent/ci")
}
