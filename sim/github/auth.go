package github

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// tokenTTL is how long an installation token lives on GitHub.
const tokenTTL = time.Hour

// maxJWTLifetime is GitHub's limit on an App JWT's exp, plus the clock
// drift GitHub tolerates.
const maxJWTLifetime = 10*time.Minute + time.Minute

// permLevel orders permission levels so scoping can compare them; 0 is
// none or unknown.
func permLevel(level string) int {
	switch level {
	case "read":
		return 1
	case "write":
		return 2
	case "admin":
		return 3
	}
	return 0
}

type token struct {
	installID int64
	repoIDs   []int64 // nil: every repository of the installation
	perms     map[string]string
	expires   time.Time
}

// appAuth admits requests bearing a valid App JWT.
func (s *Server) appAuth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			writeError(w, http.StatusUnauthorized, "A JSON web token could not be decoded")
			return
		}
		if msg := s.verifyJWT(raw); msg != "" {
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		next(w, r)
	}
}

// verifyJWT returns GitHub's complaint about an App JWT, or "" when it is
// good.
func (s *Server) verifyJWT(raw string) string {
	var claims jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) {
		return &s.key.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}))
	if err != nil {
		if ve, ok := err.(*jwt.ValidationError); ok && ve.Errors&jwt.ValidationErrorExpired != 0 {
			return "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
		}
		return "A JSON web token could not be decoded"
	}
	s.mu.Lock()
	appID := s.app.ID
	clientID := s.app.ClientID
	s.mu.Unlock()
	if claims.Issuer != strconv.FormatInt(appID, 10) && claims.Issuer != clientID {
		return fmt.Sprintf("Integration %s not found", claims.Issuer)
	}
	if claims.ExpiresAt == nil || time.Until(claims.ExpiresAt.Time) > maxJWTLifetime {
		return "'Expiration time' claim ('exp') is too far in the future"
	}
	if claims.IssuedAt == nil {
		return "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
	}
	return ""
}

// checkToken decides whether tok may use repoName with any one of perms
// at level. It answers 200 with the repository, 401 for an unknown or
// expired token, 404 when the repository is outside the token's scope
// (GitHub does not reveal that it exists) and 403 when the permission is
// missing.
func (s *Server) checkToken(tok, repoName, level string, perms ...string) (*repo, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tok]
	if !ok || time.Now().After(t.expires) {
		return nil, http.StatusUnauthorized
	}
	r, err := s.repoLocked(repoName)
	if err != nil || r.install != t.installID || (t.repoIDs != nil && !slices.Contains(t.repoIDs, r.id)) {
		return nil, http.StatusNotFound
	}
	for _, p := range perms {
		if p == "metadata" || permLevel(t.perms[p]) >= permLevel(level) {
			return r, http.StatusOK
		}
	}
	return r, http.StatusForbidden
}

// repoAuth resolves {owner}/{repo} for a REST handler and checks the
// installation token for any one of perms at level, answering the
// failure itself.
func (s *Server) repoAuth(w http.ResponseWriter, r *http.Request, level string, perms ...string) (*repo, bool) {
	tok := restToken(r)
	if tok == "" {
		writeError(w, http.StatusUnauthorized, "Requires authentication")
		return nil, false
	}
	rp, status := s.checkToken(tok, r.PathValue("owner")+"/"+r.PathValue("repo"), level, perms...)
	switch status {
	case http.StatusOK:
		return rp, true
	case http.StatusUnauthorized:
		writeError(w, status, "Bad credentials")
	case http.StatusForbidden:
		// GitHub names the permission that would have been enough.
		accepted := make([]string, len(perms))
		for i, p := range perms {
			accepted[i] = p + "=" + level
		}
		w.Header().Set("X-Accepted-GitHub-Permissions", strings.Join(accepted, "; "))
		writeError(w, status, "Resource not accessible by integration")
	default:
		writeError(w, http.StatusNotFound, "Not Found")
	}
	return nil, false
}

// restToken reads "token X" or "Bearer X", the two forms GitHub accepts.
func restToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	for _, p := range []string{"token ", "Token ", "Bearer ", "bearer "} {
		if t, ok := strings.CutPrefix(h, p); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// gitToken reads the token from git's credentials: Basic with the token
// as password (x-access-token:TOKEN, canonical) or as user name with an
// empty or x-oauth-basic password, or a bearer header.
func gitToken(r *http.Request) string {
	if user, pass, ok := r.BasicAuth(); ok {
		if pass == "" || pass == "x-oauth-basic" {
			return user
		}
		return pass
	}
	if t := restToken(r); t != "" {
		// Some extraHeader forms carry base64 "x-access-token:TOKEN".
		if b, err := base64.StdEncoding.DecodeString(t); err == nil {
			if _, pass, ok := strings.Cut(string(b), ":"); ok {
				return pass
			}
		}
		return t
	}
	return ""
}

// tokenRequest is the body of POST /app/installations/{id}/access_tokens.
type tokenRequest struct {
	Repositories  []string          `json:"repositories"`
	RepositoryIDs []int64           `json:"repository_ids"`
	Permissions   map[string]string `json:"permissions"`
}

// createToken mints an installation token narrowed to what was asked.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("installation_id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var req tokenRequest
	if r.ContentLength != 0 && !decodeBody(w, r, &req) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.installs[id]; !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	var repos []*repo
	var ids []int64
	if len(req.Repositories) > 0 || len(req.RepositoryIDs) > 0 {
		ids = []int64{}
		for _, rp := range s.installedReposLocked(id) {
			if slices.ContainsFunc(req.Repositories, func(n string) bool { return strings.EqualFold(n, rp.name) }) ||
				slices.Contains(req.RepositoryIDs, rp.id) {
				repos, ids = append(repos, rp), append(ids, rp.id)
			}
		}
		if len(ids) != len(req.Repositories)+len(req.RepositoryIDs) {
			refuseToken(w, "There is at least one repository that does not exist or is not accessible to the parent installation.")
			return
		}
	}
	perms := cloneMap(s.app.Permissions)
	if len(req.Permissions) > 0 {
		perms = map[string]string{}
		for p, lvl := range req.Permissions {
			if permLevel(lvl) == 0 || permLevel(lvl) > permLevel(s.app.Permissions[p]) {
				refuseToken(w, "The permissions requested are not granted to this installation.")
				return
			}
			perms[p] = lvl
		}
		perms["metadata"] = "read"
	}
	value := "ghs_" + randomHex(18)
	t := &token{installID: id, repoIDs: ids, perms: perms, expires: time.Now().Add(tokenTTL)}
	s.tokens[value] = t
	body := obj{
		"token":                value,
		"expires_at":           gitHubTime(t.expires),
		"permissions":          perms,
		"repository_selection": "all",
	}
	if ids != nil {
		body["repository_selection"] = "selected"
		list := make([]obj, 0, len(repos))
		for _, rp := range repos {
			list = append(list, s.repoJSON(rp, false))
		}
		body["repositories"] = list
	}
	writeJSON(w, http.StatusCreated, body)
}

// refuseToken answers a token request GitHub cannot satisfy.
func refuseToken(w http.ResponseWriter, message string) {
	writeJSON(w, http.StatusUnprocessableEntity, obj{
		"message":           message,
		"documentation_url": "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app",
		"status":            "422",
	})
}

// installedReposLocked lists an installation's repositories in creation
// order.
func (s *Server) installedReposLocked(id int64) []*repo {
	var out []*repo
	for _, rp := range s.repos {
		if rp.install == id {
			out = append(out, rp)
		}
	}
	slices.SortFunc(out, func(a, b *repo) int { return cmp.Compare(a.id, b.id) })
	return out
}

// ExpireTokens ends every installation token now, as if an hour had
// passed or the installation had been reset: their next use gets 401.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.expires = time.Now()
	}
}

// IssuedToken is the scope of an installation token the simulator minted.
type IssuedToken struct {
	Installation int64
	// Repositories are the full names the token reaches; nil means every
	// repository of the installation.
	Repositories []string
	Permissions  map[string]string
}

// TokensIssued lists the scope of every installation token minted so far,
// so that a test can check a client asks for no more than it needs.
func (s *Server) TokensIssued() []IssuedToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]IssuedToken, 0, len(s.tokens))
	for _, t := range s.tokens {
		it := IssuedToken{Installation: t.installID, Permissions: cloneMap(t.perms)}
		if t.repoIDs != nil {
			it.Repositories = []string{}
			for _, rp := range s.installedReposLocked(t.installID) {
				if slices.Contains(t.repoIDs, rp.id) {
					it.Repositories = append(it.Repositories, rp.fullName())
				}
			}
		}
		out = append(out, it)
	}
	return out
}
