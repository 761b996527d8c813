package github

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
	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
)

// PublicAPIURL is github.com's REST API root, the default GitHub.
const PublicAPIURL = "https://api.github.com"

// Config is the App's identity and how to reach GitHub.
type Config struct {
	AppID      int64
	PrivateKey []byte // PEM, as GitHub issued it
	// APIURL is the REST root: PublicAPIURL, https://HOST/api/v3 for GitHub
	// Enterprise Server, or the simulator's.
	APIURL string
	// CallTimeout bounds each operation, retries and their waits included
	// (default 90s: long enough to sit out the minute GitHub asks for after
	// a secondary rate limit, which a shorter deadline would never allow).
	CallTimeout time.Duration
	// Installations is how many clients stay cached, one per installation,
	// repository and permissions (default 256).
	Installations int
	Retry         RetryPolicy
	// Transport carries the requests (default http.DefaultTransport).
	Transport http.RoundTripper
	Logger    *slog.Logger
}

// App is agentbot's GitHub App: it mints installation tokens and hands
// out one cached client per installation. Safe for concurrent use.
type App struct {
	cfg    Config
	apps   *ghinstallation.AppsTransport
	appAPI *gh.Client // authenticated as the App (JWT)
	mu     sync.Mutex
	lru    *linkedlist.List // of *Installation, most recently used first
	cache  map[clientKey]*linkedlist.Element
}

// NewApp checks the identity and returns the App.
func NewApp(cfg Config) (*App, error) {
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
	g := &App{
		cfg:   cfg,
		lru:   linkedlist.New(),
		cache: map[clientKey]*linkedlist.Element{},
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
func apiClient(apiURL string, rt http.RoundTripper) (*gh.Client, error) {
	c := gh.NewClient(&http.Client{Transport: rt})
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
func (g *App) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, g.cfg.CallTimeout)
}

// taskPermissions are what a task's API calls need: read the policy and the
// repository, answer on issues and pull requests, write its check run.
// Collaborator permissions come with metadata, which every token carries.
var taskPermissions = app.TokenPermissions{Contents: "read", Issues: "write", PullRequests: "write", Checks: "write"}

// policyPermissions are what reading a policy file from another repository
// (the organisation's .github) needs.
var policyPermissions = app.TokenPermissions{Contents: "read"}

// clientKey names one cached client: an installation token's scope.
type clientKey struct {
	installation int64
	repo         string // owner/name, lower case: GitHub's names are case-insensitive
	perms        app.TokenPermissions
}

// Installation returns the client acting as installation id on repo
// (owner/name) alone. Its installation token is minted for that one
// repository and the permissions a task's API calls need, so that what a
// task does through it cannot reach any other repository the installation
// covers. Clients come from a least-recently-used cache so that a token is
// reused until ghinstallation refreshes it.
func (g *App) Installation(id int64, repo string) (*Installation, error) {
	return g.client(id, repo, taskPermissions)
}

// client returns the cached client for installation id scoped to repo and
// perms, making it on first use.
func (g *App) client(id int64, repo string, perms app.TokenPermissions) (*Installation, error) {
	_, name, err := splitOwnerRepo(repo)
	if err != nil {
		return nil, err
	}
	key := clientKey{installation: id, repo: strings.ToLower(repo), perms: perms}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.cache[key]; ok {
		g.lru.MoveToFront(e)
		return e.Value.(*Installation), nil
	}
	tr := ghinstallation.NewFromAppsTransport(g.apps, id)
	tr.InstallationTokenOptions = tokenOptions(name, perms)
	api, err := apiClient(g.cfg.APIURL, tr)
	if err != nil {
		return nil, err
	}
	inst := &Installation{id: id, repo: repo, parent: g, api: api, key: key}
	g.cache[key] = g.lru.PushFront(inst)
	if g.lru.Len() > g.cfg.Installations {
		last := g.lru.Remove(g.lru.Back()).(*Installation)
		delete(g.cache, last.key)
	}
	return inst, nil
}

// tokenOptions asks for a token that reaches only the repository called
// name, of the installation's owner, with perms.
func tokenOptions(name string, perms app.TokenPermissions) *gh.InstallationTokenOptions {
	return &gh.InstallationTokenOptions{
		Repositories: []string{name},
		Permissions: &gh.InstallationPermissions{
			Contents:     permissionOrNil(perms.Contents),
			Issues:       permissionOrNil(perms.Issues),
			PullRequests: permissionOrNil(perms.PullRequests),
			Checks:       permissionOrNil(perms.Checks),
			Actions:      permissionOrNil(perms.Actions),
		},
	}
}

// Token mints an installation token that reaches only repo (owner/name) and
// only with perms, for one task's clone and push.
func (g *App) Token(ctx context.Context, installationID int64, repo string, perms app.TokenPermissions) (app.RepoToken, error) {
	_, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.RepoToken{}, err
	}
	ctx, cancel := g.withTimeout(ctx)
	defer cancel()
	opts := tokenOptions(name, perms)
	tok, _, err := g.appAPI.Apps.CreateInstallationToken(ctx, installationID, opts)
	if err != nil {
		return app.RepoToken{}, fmt.Errorf("mint token for %s (installation %d): %w", repo, installationID, err)
	}
	g.cfg.Logger.InfoContext(ctx, "minted repository token", "repo", repo, "installation", installationID,
		"expires_at", tok.GetExpiresAt().Time)
	return app.RepoToken{Value: tok.GetToken(), ExpiresAt: tok.GetExpiresAt().Time}, nil
}

func permissionOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Installation is agentbot acting as one installation of the App on one
// repository: what it reads from and says to that repository. Its token
// reaches no other.
type Installation struct {
	id     int64
	repo   string
	parent *App
	api    *gh.Client
	key    clientKey
}

// ID is the installation id.
func (i *Installation) ID() int64 { return i.id }

// Repo is the repository (owner/name) the client's token is scoped to.
func (i *Installation) Repo() string { return i.repo }

// Repository reads repo's metadata.
func (i *Installation) Repository(ctx context.Context, repo string) (app.RepoInfo, error) {
	owner, name, err := splitOwnerRepo(repo)
	if err != nil {
		return app.RepoInfo{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	r, _, err := i.api.Repositories.Get(ctx, owner, name)
	if err != nil {
		if notFound(err) {
			return app.RepoInfo{}, app.Errorf(app.ENotFound, "Repository %s was not found, or agentbot is not installed on it.", repo)
		}
		return app.RepoInfo{}, fmt.Errorf("get repository %s: %w", repo, err)
	}
	return app.RepoInfo{
		ID:            r.GetID(),
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
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	// go-github v62 drops role_name, the only field that tells maintain
	// from write and triage from read; decode the answer ourselves.
	req, err := i.api.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/collaborators/%s/permission",
		url.PathEscape(owner), url.PathEscape(name), url.PathEscape(login)), nil)
	if err != nil {
		return "", err
	}
	var level struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	if _, err := i.api.Do(ctx, req, &level); err != nil {
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
		return "", "", app.Errorf(app.EInvalid, "%q is not a repository name of the form owner/name.", repo)
	}
	return owner, name, nil
}

// notFound reports whether err says the repository or what was asked of
// it is out of reach: GitHub answered 404, or refused to mint a token for
// the repository (422: not one the installation covers; 404: no such
// installation). GitHub answers both alike so as not to reveal what
// exists.
func notFound(err error) bool {
	if isStatus(err, http.StatusNotFound) {
		return true
	}
	if e, ok := errors.AsType[*ghinstallation.HTTPError](err); ok && e.Response != nil {
		return e.Response.StatusCode == http.StatusNotFound || e.Response.StatusCode == http.StatusUnprocessableEntity
	}
	return false
}

// isStatus reports whether err is GitHub answering with HTTP status code.
func isStatus(err error, code int) bool {
	if e, ok := errors.AsType[*gh.ErrorResponse](err); ok && e.Response != nil {
		return e.Response.StatusCode == code
	}
	return false
}
