package app

import (
	linkedlist "container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/google/go-github/v62/github"
)

// PublicAPIURL is github.com's REST API root, the default GitHub.
const PublicAPIURL = "https://api.github.com"

// GitHubConfig is the App's identity and how to reach GitHub.
type GitHubConfig struct {
	AppID      int64
	PrivateKey []byte // PEM, as GitHub issued it
	// APIURL is the REST root: PublicAPIURL, https://HOST/api/v3 for GitHub
	// Enterprise Server, or the simulator's.
	APIURL string
	// CallTimeout bounds each operation, retries and their waits included
	// (default 90s: long enough to sit out the minute GitHub asks for after
	// a secondary rate limit, which a shorter deadline would never allow).
	CallTimeout time.Duration
	// Installations is how many installation clients stay cached (default 256).
	Installations int
	Retry         RetryPolicy
	// Transport carries the requests (default http.DefaultTransport).
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// GitHubApp is agentbot's GitHub App: it mints installation tokens and hands
// out one cached client per installation. Safe for concurrent use.
type GitHubApp struct {
	cfg    GitHubConfig
	apps   *ghinstallation.AppsTransport
	appAPI *github.Client // authenticated as the App (JWT)
	mu     sync.Mutex
	lru    *linkedlist.List // of *Installation, most recently used first
	byID   map[int64]*linkedlist.Element
}

// NewGitHubApp checks the identity and returns the App.
func NewGitHubApp(cfg GitHubConfig) (*GitHubApp, error) {
	if cfg.AppID <= 0 {
		return nil, errors.New("github app: app id is missing")
	}
	if cfg.APIURL == "" {
		cfg.APIURL = PublicAPIURL
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 90 * time.Second
	}
	if cfg.Installations <= 0 {
		cfg.Installations = 256
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Retry = cfg.Retry.withDefaults()
	if _, err := WebURL(cfg.APIURL); err != nil {
		return nil, err
	}
	g := &GitHubApp{
		cfg:  cfg,
		lru:  linkedlist.New(),
		byID: map[int64]*linkedlist.Element{},
	}
	var err error
	// Every request, token refreshes included, goes through the retries.
	g.apps, err = ghinstallation.NewAppsTransport(newRetryTransport(cfg.Transport, cfg.Retry), cfg.AppID, cfg.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("github app %d: private key: %w", cfg.AppID, err)
	}
	g.apps.BaseURL = cfg.APIURL
	if g.appAPI, err = apiClient(cfg.APIURL, g.apps); err != nil {
		return nil, err
	}
	return g, nil
}

// WebURL returns the web root that belongs to a REST root:
// https://api.github.com → https://github.com, https://HOST/api/v3 → https://HOST.
func WebURL(apiURL string) (string, error) {
	u, err := url.Parse(strings.TrimRight(apiURL, "/"))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("github url %q: not an absolute URL", apiURL)
	}
	if u.Host == "api.github.com" {
		return "https://github.com", nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/api/v3")
	return u.String(), nil
}

// apiClient returns a go-github client that sends through rt to the GitHub
// whose REST root is apiURL (without a trailing slash).
func apiClient(apiURL string, rt http.RoundTripper) (*github.Client, error) {
	c := github.NewClient(&http.Client{Transport: rt})
	if apiURL == PublicAPIURL {
		return c, nil
	}
	c, err := c.WithEnterpriseURLs(apiURL, strings.TrimSuffix(apiURL, "/api/v3")+"/api/uploads")
	if err != nil {
		return nil, fmt.Errorf("github url %q: %w", apiURL, err)
	}
	return c, nil
}

// withTimeout bounds one operation.
func (g *GitHubApp) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, g.cfg.CallTimeout)
}

// Installation returns the client acting as installation id, from a
// least-recently-used cache so that its installation token is reused until
// ghinstallation refreshes it.
func (g *GitHubApp) Installation(id int64) (*Installation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.byID[id]; ok {
		g.lru.MoveToFront(e)
		return e.Value.(*Installation), nil
	}
	tr := ghinstallation.NewFromAppsTransport(g.apps, id)
	gh, err := apiClient(g.cfg.APIURL, tr)
	if err != nil {
		return nil, err
	}
	inst := &Installation{id: id, app: g, gh: gh}
	g.byID[id] = g.lru.PushFront(inst)
	if g.lru.Len() > g.cfg.Installations {
		last := g.lru.Remove(g.lru.Back()).(*Installation)
		delete(g.byID, last.id)
	}
	return inst, nil
}

// TokenPermissions are the permissions a task's token carries: "read",
// "write" or empty for none. Ask for the least the task needs.
type TokenPermissions struct {
	Contents     string
	Issues       string
	PullRequests string
	Checks       string
}

// RepoToken is an installation token scoped to one repository. It is a
// credential: use it only on the host, never log it, never hand it to a
// sandbox. String and LogValue redact it so that a stray print cannot leak it.
type RepoToken struct {
	Value     string
	ExpiresAt time.Time
}

func (t RepoToken) String() string { return "[token redacted]" }

// LogValue keeps the token out of structured logs.
func (t RepoToken) LogValue() slog.Value {
	return slog.GroupValue(slog.Time("expires_at", t.ExpiresAt))
}

// Token mints an installation token that reaches only repo (owner/name) and
// only with perms, for one task's clone and push.
func (g *GitHubApp) Token(ctx context.Context, installationID int64, repo string, perms TokenPermissions) (RepoToken, error) {
	_, name, err := splitOwnerRepo(repo)
	if err != nil {
		return RepoToken{}, err
	}
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	opts := &github.InstallationTokenOptions{
		Repositories: []string{name},
		Permissions: &github.InstallationPermissions{
			Contents:     permissionOrNil(perms.Contents),
			Issues:       permissionOrNil(perms.Issues),
			PullRequests: permissionOrNil(perms.PullRequests),
			Checks:       permissionOrNil(perms.Checks),
		},
	}
	tok, _, err := g.appAPI.Apps.CreateInstallationToken(ctx, installationID, opts)
	if err != nil {
		return RepoToken{}, fmt.Errorf("mint token for %s (installation %d): %w", repo, installationID, err)
	}
	g.cfg.Logger.InfoContext(ctx, "minted repository token", "repo", repo, "installation", installationID,
		"expires_at", tok.GetExpiresAt().Time)
	return RepoToken{Value: tok.GetToken(), ExpiresAt: tok.GetExpiresAt().Time}, nil
}

func permissionOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Installation is agentbot acting as one installation of the App: what it
// reads from and says to the repositories that installation covers.
type Installation struct {
	id  int64
	app *GitHubApp
	gh  *github.Client
}

// ID is the installation id.
func (i *Installation) ID() int64 { return i.id }

// RepoInfo is what agentbot needs to know of a repository.
type RepoInfo struct {
	FullName      string // owner/name
	DefaultBranch string
	CloneURL      string // from the API, never built by hand
	Private       bool
}

// Repository reads repo's metadata.
func (i *Installation) Repository(ctx context.Context, repo string) (RepoInfo, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return RepoInfo{}, err
	}
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	r, _, err := i.gh.Repositories.Get(ctx, owner, name)
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return RepoInfo{}, Errorf(ENotFound, "Repository %s was not found, or agentbot is not installed on it.", repo)
		}
		return RepoInfo{}, fmt.Errorf("get repository %s: %w", repo, err)
	}
	return RepoInfo{
		FullName:      r.GetFullName(),
		DefaultBranch: r.GetDefaultBranch(),
		CloneURL:      r.GetCloneURL(),
		Private:       r.GetPrivate(),
	}, nil
}

// Permission returns login's role on repo: admin, maintain, write, triage,
// read, or none for someone who is not a collaborator.
func (i *Installation) Permission(ctx context.Context, repo, login string) (string, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return "", err
	}
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	// go-github v62 drops role_name, the only field that tells maintain
	// from write and triage from read; decode the answer ourselves.
	req, err := i.gh.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission",
		url.PathEscape(owner), url.PathEscape(name), url.PathEscape(login)), nil)
	if err != nil {
		return "", err
	}
	var level struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := i.gh.Do(ctx, req, &level); err != nil {
		if isStatus(err, http.StatusNotFound) {
			return "none", nil
		}
		return "", fmt.Errorf("permission of %s on %s: %w", login, repo, err)
	}
	if level.RoleName != "" {
		return level.RoleName, nil
	}
	return level.Permission, nil
}

// splitOwnerRepo splits "owner/name".
func splitOwnerRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", Errorf(EInvalid, "%q is not a repository name of the form owner/name.", repo)
	}
	return owner, name, nil
}

// isStatus reports whether err is GitHub answering with HTTP status code.
func isStatus(err error, code int) bool {
	if e, ok := errors.AsType[*github.ErrorResponse](err); ok && e.Response != nil {
		return e.Response.StatusCode == code
	}
	return false
}
