package github

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxBody is GitHub's limit on issue, comment and pull request bodies.
const maxBody = 65536

func (s *Server) getApp(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.appJSON())
}

func (s *Server) installationJSON(in *installation) obj {
	t := gitHubTime(in.created)
	return obj{
		"id": in.id, "account": s.userJSON(in.account), "repository_selection": "selected",
		"access_tokens_url": fmt.Sprintf("%s/app/installations/%d/access_tokens", s.api, in.id),
		"repositories_url":  s.api + "/installation/repositories",
		"html_url":          fmt.Sprintf("%s/organizations/%s/settings/installations/%d", s.base, in.account.login, in.id),
		"app_id":            s.app.ID, "app_slug": s.app.Slug, "target_id": in.account.id,
		"target_type": in.account.typ, "permissions": cloneMap(s.app.Permissions), "events": s.app.Events,
		"created_at": t, "updated_at": t, "single_file_name": nil, "suspended_at": nil, "suspended_by": nil,
	}
}

func (s *Server) getInstallation(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("installation_id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.installs[id]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSON(in))
}

func (s *Server) getRepoInstallation(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(r.PathValue("owner") + "/" + r.PathValue("repo"))
	if err != nil || s.installs[rp.install] == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.installationJSON(s.installs[rp.install]))
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "metadata")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.repoJSON(rp, true))
}

func (s *Server) getPermission(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "metadata")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, known := s.users[strings.ToLower(r.PathValue("username"))]
	if !known {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	role := rp.roles[strings.ToLower(u.login)]
	legacy, _ := legacyPermission(role)
	if role == "" {
		role = "none"
	}
	collab := s.userJSON(u)
	collab["role_name"] = role
	rank := map[string]int{"read": 1, "triage": 2, "write": 3, "maintain": 4, "admin": 5}[role]
	collab["permissions"] = obj{
		"pull": rank >= 1, "triage": rank >= 2, "push": rank >= 3, "maintain": rank >= 4, "admin": rank >= 5,
	}
	writeJSON(w, http.StatusOK, obj{"permission": legacy, "role_name": role, "user": collab})
}

const contentsDocs = "https://docs.github.com/rest/repos/contents#get-repository-content"

// getContent serves a file (base64, as GitHub does) or a directory
// listing from the default branch or ?ref=, read from the bare repository.
func (s *Server) getContent(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "contents")
	if !ok {
		return
	}
	notFound := func() {
		writeJSON(w, http.StatusNotFound, obj{"message": "Not Found", "documentation_url": contentsDocs, "status": "404"})
	}
	p := strings.Trim(r.PathValue("path"), "/")
	ref := r.URL.Query().Get("ref")
	if ref == "" {
		ref = "main"
	}
	commit, err := s.resolve(rp.dir, ref)
	if err != nil {
		writeJSON(w, http.StatusNotFound, obj{"message": "No commit found for the ref " + ref, "documentation_url": contentsDocs, "status": "404"})
		return
	}
	var self []treeEntry
	if p != "" {
		if self, err = s.lsTree(rp.dir, commit, p, false); err != nil || len(self) != 1 || self[0].path != p {
			notFound()
			return
		}
	}
	if p != "" && self[0].typ == "blob" {
		data, err := s.readBlob(rp.dir, self[0].sha)
		if err != nil {
			notFound()
			return
		}
		m := s.contentEntry(rp, ref, self[0])
		m["content"] = wrapBase64(base64.StdEncoding.EncodeToString(data))
		m["encoding"] = "base64"
		writeJSON(w, http.StatusOK, m)
		return
	}
	children, err := s.lsTree(rp.dir, commit, p, true)
	if err != nil {
		notFound()
		return
	}
	list := make([]obj, 0, len(children))
	for _, e := range children {
		list = append(list, s.contentEntry(rp, ref, e))
	}
	writeJSON(w, http.StatusOK, list)
}

// contentEntry is the metadata GitHub gives for a file or directory.
func (s *Server) contentEntry(rp *repo, ref string, e treeEntry) obj {
	typ := map[string]string{"blob": "file", "tree": "dir", "commit": "submodule"}[e.typ]
	if e.mode == "120000" {
		typ = "symlink"
	}
	self := rp.apiURL(s) + "/contents/" + e.path + "?ref=" + url.QueryEscape(ref)
	git := rp.apiURL(s) + "/git/blobs/" + e.sha
	kind := "blob"
	var download any = fmt.Sprintf("%s/%s/raw/%s/%s", s.base, rp.fullName(), ref, e.path)
	if typ == "dir" {
		git = rp.apiURL(s) + "/git/trees/" + e.sha
		kind, download = "tree", nil
	}
	html := fmt.Sprintf("%s/%s/%s/%s", rp.htmlURL(s), kind, ref, e.path)
	return obj{
		"type": typ, "size": e.size, "name": path.Base(e.path), "path": e.path, "sha": e.sha,
		"url": self, "git_url": git, "html_url": html, "download_url": download,
		"_links": obj{"self": self, "git": git, "html": html},
	}
}

// wrapBase64 breaks base64 into 60-character lines, as GitHub's contents
// API does; clients must cope with the newlines.
func wrapBase64(b64 string) string {
	var sb strings.Builder
	for len(b64) > 60 {
		sb.WriteString(b64[:60])
		sb.WriteByte('\n')
		b64 = b64[60:]
	}
	sb.WriteString(b64)
	sb.WriteByte('\n')
	return sb.String()
}

func (s *Server) getBranch(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "contents")
	if !ok {
		return
	}
	name := r.PathValue("branch")
	sha, err := s.branchSHA(rp.dir, name)
	if err != nil {
		writeJSON(w, http.StatusNotFound, obj{"message": "Branch not found", "documentation_url": "https://docs.github.com/rest/branches/branches#get-a-branch", "status": "404"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	api := rp.apiURL(s)
	writeJSON(w, http.StatusOK, obj{
		"name": name,
		"commit": obj{
			"sha": sha, "node_id": nodeID("Commit", rp.id), "url": api + "/commits/" + sha,
			"html_url": rp.htmlURL(s) + "/commit/" + sha,
		},
		"_links":    obj{"self": api + "/branches/" + name, "html": rp.htmlURL(s) + "/tree/" + name},
		"protected": false, "protection_url": api + "/branches/" + name + "/protection",
	})
}

// pathInt reads a numeric path value, answering 404 when it is not one.
func pathInt(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || n < 1 {
		writeError(w, http.StatusNotFound, "Not Found")
		return 0, false
	}
	return n, true
}

// issueFor authorises an issues-API call and finds the issue; a pull
// request's issue may be reached with either issues or pull_requests
// permission, so both are accepted.
func (s *Server) issueFor(w http.ResponseWriter, r *http.Request, level string) (*repo, int, bool) {
	rp, is, ok := s.numberedIssue(w, r, "issue_number", level, "issues", "pull_requests")
	if !ok {
		return nil, 0, false
	}
	return rp, is.Number, true
}

// numberedIssue authorises a call that any of perms at level allows and
// finds the issue or pull request numbered by the path parameter param,
// answering the failure itself: issues and pull requests share one
// numbering, so the issues and pulls APIs look them up alike.
func (s *Server) numberedIssue(w http.ResponseWriter, r *http.Request, param, level string, perms ...string) (*repo, *Issue, bool) {
	rp, ok := s.repoAuth(w, r, level, perms...)
	if !ok {
		return nil, nil, false
	}
	n, ok := pathInt(w, r, param)
	if !ok {
		return nil, nil, false
	}
	s.mu.Lock()
	is, err := rp.issueLocked(int(n))
	s.mu.Unlock()
	if err != nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil, false
	}
	return rp, is, true
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.issueFor(w, r, "read")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.issueJSON(rp, rp.issues[n-1]))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.issueFor(w, r, "read")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []obj
	for _, c := range rp.comments {
		if c.Issue == n {
			list = append(list, s.commentJSON(rp, c))
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}

// bodyTooLong is GitHub's answer to a body over 65,536 characters.
func bodyTooLong(w http.ResponseWriter, resource, body string) bool {
	if utf8.RuneCountInString(body) <= maxBody {
		return false
	}
	writeValidation(w, fieldError{Resource: resource, Field: "body", Code: "custom",
		Message: fmt.Sprintf("body is too long (maximum is %d characters)", maxBody)})
	return true
}

type bodyRequest struct {
	Body *string `json:"body"`
}

// readBody decodes {"body": ...}, which is required and length-capped.
func readBody(w http.ResponseWriter, r *http.Request, resource string) (string, bool) {
	var req bodyRequest
	if !decodeBody(w, r, &req) {
		return "", false
	}
	if req.Body == nil {
		writeValidation(w, fieldError{Resource: resource, Field: "body", Code: "missing_field"})
		return "", false
	}
	if bodyTooLong(w, resource, *req.Body) {
		return "", false
	}
	return *req.Body, true
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.issueFor(w, r, "write")
	if !ok {
		return
	}
	body, ok := readBody(w, r, "IssueComment")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.addCommentLocked(rp, n, s.app.BotLogin, body)
	w.Header().Set("Location", fmt.Sprintf("%s/issues/comments/%d", rp.apiURL(s), c.ID))
	writeJSON(w, http.StatusCreated, s.commentJSON(rp, c))
	s.echo("issue_comment", s.commentEventLocked(rp, c, "created", s.app.BotLogin))
}

// commentFor finds an issue comment of the request's repository.
func (s *Server) commentFor(w http.ResponseWriter, r *http.Request, rp *repo) (*Comment, bool) {
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return nil, false
	}
	c, found := s.comments[id]
	if !found || c.Repo != rp.fullName() {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return c, true
}

func (s *Server) updateComment(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "issues", "pull_requests")
	if !ok {
		return
	}
	body, ok := readBody(w, r, "IssueComment")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.commentFor(w, r, rp)
	if !ok {
		return
	}
	from := c.Body
	c.Body = body
	c.Edits++
	c.UpdatedAt = now()
	writeJSON(w, http.StatusOK, s.commentJSON(rp, c))
	event := s.commentEventLocked(rp, c, "edited", s.app.BotLogin)
	event["changes"] = obj{"body": obj{"from": from}}
	s.echo("issue_comment", event)
}

// react adds the App's reaction to rs unless it is there already: GitHub
// answers 200 with the existing reaction then, 201 with a new one.
func (s *Server) react(w http.ResponseWriter, r *http.Request, rs *[]Reaction) {
	var req struct {
		Content string `json:"content"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if !slices.Contains(reactionContents(), req.Content) {
		writeValidation(w, fieldError{Resource: "Reaction", Field: "content", Code: "invalid"})
		return
	}
	for _, x := range *rs {
		if x.User == s.app.BotLogin && x.Content == req.Content {
			writeJSON(w, http.StatusOK, s.reactionJSON(x))
			return
		}
	}
	x := Reaction{ID: s.newID(), User: s.app.BotLogin, Content: req.Content, CreatedAt: now()}
	*rs = append(*rs, x)
	writeJSON(w, http.StatusCreated, s.reactionJSON(x))
}

func (s *Server) reactToComment(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "issues", "pull_requests")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.commentFor(w, r, rp); ok {
		s.react(w, r, &c.Reactions)
	}
}

func (s *Server) reactToIssue(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.issueFor(w, r, "write")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.react(w, r, &rp.issues[n-1].Reactions)
}

func (s *Server) reactToReviewComment(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "pull_requests")
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found := s.reviewComments[id]
	if !found || c.Repo != rp.fullName() {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.react(w, r, &c.Reactions)
}

// addLabels takes {"labels": [...]} or a bare array, as GitHub does.
func (s *Server) addLabels(w http.ResponseWriter, r *http.Request) {
	rp, n, ok := s.issueFor(w, r, "write")
	if !ok {
		return
	}
	var raw any
	if !decodeBody(w, r, &raw) {
		return
	}
	if m, ok := raw.(map[string]any); ok {
		raw = m["labels"]
	}
	items, _ := raw.([]any)
	var names []string
	for _, it := range items {
		if name, ok := it.(string); ok && name != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		writeValidation(w, fieldError{Resource: "Label", Field: "labels", Code: "missing_field"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	is := rp.issues[n-1]
	for _, name := range names {
		if !slices.Contains(is.Labels, name) {
			is.Labels = append(is.Labels, name)
		}
	}
	is.UpdatedAt = now()
	writeJSON(w, http.StatusOK, s.labelsJSON(rp, is.Labels))
}

// paginate cuts list to ?page= and ?per_page= (default 30, at most 100)
// and sets GitHub's Link header.
func paginate[T any](w http.ResponseWriter, r *http.Request, list []T) []T {
	q := r.URL.Query()
	per, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || per < 1 {
		per = 30
	}
	per = min(per, 100)
	page, err := strconv.Atoi(q.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	last := max(1, (len(list)+per-1)/per)
	pageURL := func(p int) string {
		u := *r.URL
		v := u.Query()
		v.Set("page", strconv.Itoa(p))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return "http://" + r.Host + u.String()
	}
	var links []string
	if page > 1 {
		links = append(links, fmt.Sprintf(`<%s>; rel="prev"`, pageURL(page-1)))
	}
	if page < last {
		links = append(links, fmt.Sprintf(`<%s>; rel="next"`, pageURL(page+1)), fmt.Sprintf(`<%s>; rel="last"`, pageURL(last)))
	}
	if page > 1 {
		links = append(links, fmt.Sprintf(`<%s>; rel="first"`, pageURL(1)))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	start := min((page-1)*per, len(list))
	out := list[start:min(start+per, len(list))]
	if out == nil {
		out = []T{}
	}
	return out
}
