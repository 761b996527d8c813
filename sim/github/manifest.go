package github

import (
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// manifestTTL is how long GitHub keeps a manifest code.
const manifestTTL = time.Hour

// manifest is the part of an App manifest the simulator acts on.
type manifest struct {
	Name           string `json:"name"`
	URL            string `json:"url"`
	Description    string `json:"description"`
	RedirectURL    string `json:"redirect_url"`
	HookAttributes struct {
		URL string `json:"url"`
	} `json:"hook_attributes"`
	Public             bool              `json:"public"`
	DefaultPermissions map[string]string `json:"default_permissions"`
	DefaultEvents      []string          `json:"default_events"`
}

type manifestCode struct {
	m       manifest
	owner   string
	expires time.Time
}

// newApp receives the manifest form POST (a "manifest" field and
// ?state=), as https://github.com/settings/apps/new does, and redirects
// to the manifest's redirect_url with a one-time code and the state.
func (s *Server) newApp(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "Invalid form", http.StatusBadRequest)
		return
	}
	var m manifest
	if err := json.Unmarshal([]byte(r.PostForm.Get("manifest")), &m); err != nil {
		http.Error(w, "Invalid GitHub App configuration: the manifest is not valid JSON", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(m.RedirectURL)
	if m.Name == "" || m.URL == "" || err != nil || !redirect.IsAbs() {
		http.Error(w, "Invalid GitHub App configuration: name, url and an absolute redirect_url are required", http.StatusUnprocessableEntity)
		return
	}
	owner := r.PathValue("org")
	if owner == "" {
		// A personal App belongs to the signed-in user; nobody signs in here.
		owner = "octocat"
	}
	code := randomHex(20)
	s.mu.Lock()
	s.manifestCodes[code] = manifestCode{m: m, owner: owner, expires: time.Now().Add(manifestTTL)}
	s.mu.Unlock()
	q := redirect.Query()
	q.Set("code", code)
	if st := r.URL.Query().Get("state"); st != "" {
		q.Set("state", st)
	}
	redirect.RawQuery = q.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

// convertManifest exchanges a manifest code for the App's credentials;
// the App takes the manifest's name, permissions, events and hook URL.
// A code works once and for an hour.
func (s *Server) convertManifest(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	mc, ok := s.manifestCodes[r.PathValue("code")]
	delete(s.manifestCodes, r.PathValue("code"))
	if !ok || time.Now().After(mc.expires) {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.renameApp(mc.m.Name)
	s.app.Owner = mc.owner
	s.userLocked(mc.owner, "")
	if mc.m.DefaultPermissions != nil {
		s.app.Permissions = cloneMap(mc.m.DefaultPermissions)
		s.app.Permissions["metadata"] = "read"
	}
	if mc.m.DefaultEvents != nil {
		s.app.Events = append([]string(nil), mc.m.DefaultEvents...)
	}
	s.app.HookURL = mc.m.HookAttributes.URL
	s.app.Description = mc.m.Description
	s.app.ExternalURL = mc.m.URL
	body := s.appJSON()
	body["client_secret"] = s.app.ClientSecret
	body["webhook_secret"] = s.app.WebhookSecret
	body["pem"] = string(s.app.PrivateKeyPEM)
	writeJSON(w, http.StatusCreated, body)
}
