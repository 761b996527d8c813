package github

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The Git database API: blobs, trees, commits and refs written as real
// objects into the bare repository, so that git reads what a client built.
// A commit the App creates without naming an author or a committer is made
// by the App's bot and signed with the simulator's key, as GitHub signs
// such commits; its verification answers "valid" for as long as the
// simulator runs, and any other commit's answers "unsigned".

// gitdbRoutes registers the Git database operations.
func (s *Server) gitdbRoutes(api func(pattern string, h http.HandlerFunc)) {
	api("POST /repos/{owner}/{repo}/git/blobs", s.createBlob)
	api("POST /repos/{owner}/{repo}/git/trees", s.createTree)
	api("GET /repos/{owner}/{repo}/git/trees/{tree_sha}", s.getTree)
	api("POST /repos/{owner}/{repo}/git/commits", s.createGitCommit)
	api("GET /repos/{owner}/{repo}/git/commits/{commit_sha}", s.getGitCommit)
	api("GET /repos/{owner}/{repo}/git/ref/{ref...}", s.getRef)
	api("POST /repos/{owner}/{repo}/git/refs", s.createRef)
	api("PATCH /repos/{owner}/{repo}/git/refs/{ref...}", s.updateRef)
}

// gitInput runs git in dir with stdin and returns its output trimmed.
func (s *Server) gitInput(dir string, env []string, stdin []byte, args ...string) (string, error) {
	out, err := s.runGitInput(context.Background(), dir, env, stdin, args...)
	return strings.TrimSpace(string(out)), err
}

// objectType is the type of object sha in dir, "" when it does not exist.
func (s *Server) objectType(dir, sha string) string {
	if !isSHA(sha) {
		return ""
	}
	out, err := s.runGit(context.Background(), dir, nil, "cat-file", "-t", sha)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func isSHA(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

func (s *Server) gitURL(rp *repo, kind, sha string) string {
	return rp.apiURL(s) + "/git/" + kind + "/" + sha
}

func (s *Server) createBlob(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "contents")
	if !ok {
		return
	}
	var req struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Content == nil {
		writeValidation(w, fieldError{Resource: "Blob", Field: "content", Code: "missing_field"})
		return
	}
	data := []byte(*req.Content)
	switch req.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		// GitHub accepts base64 wrapped in lines, as its own answers are.
		if data, err = base64.StdEncoding.DecodeString(strings.NewReplacer("\n", "", "\r", "").Replace(*req.Content)); err != nil {
			writeValidation(w, fieldError{Resource: "Blob", Field: "content", Code: "invalid", Message: "content is not valid Base64"})
			return
		}
	default:
		writeValidation(w, fieldError{Resource: "Blob", Field: "encoding", Code: "invalid",
			Message: fmt.Sprintf("encoding %q is not supported: use utf-8 or base64", req.Encoding)})
		return
	}
	sha, err := s.gitInput(rp.dir, nil, data, "hash-object", "-w", "--stdin")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, obj{"sha": sha, "url": s.gitURL(rp, "blobs", sha)})
}

// treeEntryRequest is one entry of a create-tree request. SHA is kept raw
// to tell null (delete the path) from absent (use content).
type treeEntryRequest struct {
	Path    string          `json:"path"`
	Mode    string          `json:"mode"`
	Type    string          `json:"type"`
	SHA     json.RawMessage `json:"sha"`
	Content *string         `json:"content"`
}

// modeTypes maps each tree-entry mode to the object type it names.
var modeTypes = map[string]string{"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree", "160000": "commit"}

// validTreePath reports whether p can name an entry: relative, no empty,
// "." or ".." segment, and no .git.
func validTreePath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsRune(p, 0) {
		return false
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, ".git") {
			return false
		}
	}
	return true
}

func (s *Server) createTree(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "contents")
	if !ok {
		return
	}
	var req struct {
		Tree     []treeEntryRequest `json:"tree"`
		BaseTree string             `json:"base_tree"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Tree == nil {
		writeValidation(w, fieldError{Resource: "Tree", Field: "tree", Code: "missing_field"})
		return
	}
	// Without workflows: write, GitHub answers a tree that touches a
	// workflow file with a bare 404, as it does the Contents API.
	if _, st := s.checkToken(restToken(r), rp.fullName(), "write", "workflows"); st != http.StatusOK {
		for _, e := range req.Tree {
			if isWorkflowPath(e.Path) {
				writeError(w, http.StatusNotFound, "Not Found")
				return
			}
		}
	}
	g, err := s.newScratch(rp)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer g.close()
	if req.BaseTree != "" {
		if s.objectType(rp.dir, req.BaseTree) != "tree" {
			writeValidation(w, fieldError{Resource: "Tree", Field: "base_tree", Code: "invalid", Message: "base_tree is not a valid tree oid"})
			return
		}
		if _, err := g.git("read-tree", req.BaseTree); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	for i, e := range req.Tree {
		if msg := s.applyTreeEntry(g, rp, e); msg != "" {
			writeJSON(w, http.StatusUnprocessableEntity, obj{
				"message": fmt.Sprintf("tree[%d]: %s", i, msg), "documentation_url": docsURL, "status": "422",
			})
			return
		}
	}
	tree, err := g.git("write-tree")
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.writeTree(w, rp, http.StatusCreated, tree, false)
}

// isWorkflowPath reports whether p is, or is inside, .github/workflows.
func isWorkflowPath(p string) bool {
	return p == ".github" || p == ".github/workflows" || strings.HasPrefix(p, ".github/workflows/")
}

// applyTreeEntry applies e to g's index and says what is wrong with it,
// "" when nothing is.
func (s *Server) applyTreeEntry(g *scratch, rp *repo, e treeEntryRequest) string {
	if !validTreePath(e.Path) {
		return fmt.Sprintf("path %q contains a malformed path component", e.Path)
	}
	typ, ok := modeTypes[e.Mode]
	if !ok {
		return fmt.Sprintf("mode %q is not one of 100644, 100755, 040000, 160000, 120000", e.Mode)
	}
	if e.Type != "" && e.Type != typ {
		return fmt.Sprintf("type %q does not match mode %s", e.Type, e.Mode)
	}
	// Paths are names, not patterns: "*.md" names one file.
	present, err := g.gitEnv([]string{"GIT_LITERAL_PATHSPECS=1"}, "ls-files", "-z", "--", e.Path, e.Path+"/")
	if err != nil {
		return err.Error()
	}
	var existing []string
	for p := range strings.SplitSeq(present, "\x00") {
		if p != "" {
			existing = append(existing, p)
		}
	}
	var sha string
	switch {
	case string(e.SHA) == "null" && e.Content == nil:
		if len(existing) == 0 {
			return fmt.Sprintf("path %q cannot be deleted: it is not in base_tree", e.Path)
		}
		return removePaths(g, existing)
	case e.Content != nil:
		if typ != "blob" {
			return "content is only valid for blobs"
		}
		if sha, err = s.gitInput(rp.dir, nil, []byte(*e.Content), "hash-object", "-w", "--stdin"); err != nil {
			return err.Error()
		}
	case len(e.SHA) > 0:
		if err := json.Unmarshal(e.SHA, &sha); err != nil {
			return "sha must be a string or null"
		}
		// A submodule's commit lives in another repository.
		if typ != "commit" && s.objectType(rp.dir, sha) != typ {
			return fmt.Sprintf("sha %s is not a valid %s", sha, typ)
		}
	default:
		return "either sha or content is required"
	}
	// The new entry replaces whatever the path held: a file, or a
	// directory's files.
	if len(existing) > 0 {
		if msg := removePaths(g, existing); msg != "" {
			return msg
		}
	}
	if typ == "tree" {
		if _, err := g.git("read-tree", "--prefix="+e.Path+"/", sha); err != nil {
			return err.Error()
		}
		return ""
	}
	line := fmt.Sprintf("%s %s\t%s\n", strings.TrimPrefix(e.Mode, "0"), sha, e.Path)
	if _, err := s.gitInput(rp.dir, []string{"GIT_INDEX_FILE=" + g.index()}, []byte(line), "update-index", "--add", "--index-info"); err != nil {
		return err.Error()
	}
	return ""
}

// index is the scratch index file.
func (g *scratch) index() string { return filepath.Join(g.tmp, "index") }

// removePaths drops paths from g's index.
func removePaths(g *scratch, paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "0 %s\t%s\n", strings.Repeat("0", 40), p)
	}
	if _, err := g.s.gitInput(g.dir, []string{"GIT_INDEX_FILE=" + g.index()}, []byte(b.String()), "update-index", "--index-info"); err != nil {
		return err.Error()
	}
	return ""
}

func (s *Server) getTree(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "contents")
	if !ok {
		return
	}
	sha := r.PathValue("tree_sha")
	if s.objectType(rp.dir, sha) != "tree" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	rec := r.URL.Query().Get("recursive")
	s.writeTree(w, rp, http.StatusOK, sha, rec != "" && rec != "0" && rec != "false")
}

// writeTree answers with tree sha: its own entries, or all of them when
// recursive.
func (s *Server) writeTree(w http.ResponseWriter, rp *repo, status int, sha string, recursive bool) {
	args := []string{"ls-tree", "-l", "-z"}
	if recursive {
		args = append(args, "-r", "-t")
	}
	out, err := s.runGit(context.Background(), rp.dir, nil, append(args, sha)...)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	entries := []obj{}
	for rec := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 {
			continue
		}
		e := obj{"path": p, "mode": f[0], "type": f[1], "sha": f[2]}
		switch f[1] {
		case "blob":
			size, _ := strconv.Atoi(f[3])
			e["size"], e["url"] = size, s.gitURL(rp, "blobs", f[2])
		case "tree":
			e["url"] = s.gitURL(rp, "trees", f[2])
		}
		entries = append(entries, e)
	}
	writeJSON(w, status, obj{"sha": sha, "url": s.gitURL(rp, "trees", sha), "tree": entries, "truncated": false})
}

// gitPerson is an author or committer of a create-commit request.
type gitPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

// line renders p as a commit header value, at p's date or else at.
func (p gitPerson) line(at time.Time) (string, error) {
	if p.Name == "" || p.Email == "" || strings.ContainsAny(p.Name+p.Email, "<>\n\x00") {
		return "", errors.New("name and email are required and may not contain <, > or newlines")
	}
	if p.Date != "" {
		t, err := time.Parse(time.RFC3339, p.Date)
		if err != nil {
			return "", fmt.Errorf("date %q is not an ISO 8601 timestamp", p.Date)
		}
		at = t
	}
	return fmt.Sprintf("%s <%s> %d %s", p.Name, p.Email, at.Unix(), at.Format("-0700")), nil
}

func (s *Server) createGitCommit(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "contents")
	if !ok {
		return
	}
	var req struct {
		Message   *string    `json:"message"`
		Tree      string     `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *gitPerson `json:"author"`
		Committer *gitPerson `json:"committer"`
		Signature string     `json:"signature"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Message == nil {
		writeValidation(w, fieldError{Resource: "Commit", Field: "message", Code: "missing_field"})
		return
	}
	if s.objectType(rp.dir, req.Tree) != "tree" {
		writeValidation(w, fieldError{Resource: "Commit", Field: "tree", Code: "invalid", Message: "Tree SHA does not exist"})
		return
	}
	var head strings.Builder
	fmt.Fprintf(&head, "tree %s\n", req.Tree)
	for _, p := range req.Parents {
		if s.objectType(rp.dir, p) != "commit" {
			writeValidation(w, fieldError{Resource: "Commit", Field: "parents", Code: "invalid", Message: "Parent SHA does not exist or is not a commit object"})
			return
		}
		fmt.Fprintf(&head, "parent %s\n", p)
	}
	// Without an author or a committer the commit is the App's own, and
	// GitHub signs it.
	sign := req.Author == nil && req.Committer == nil && req.Signature == ""
	at := now()
	s.mu.Lock()
	bot := s.userLocked(s.app.BotLogin, "Bot")
	self := gitPerson{Name: s.app.BotLogin, Email: fmt.Sprintf("%d+%s@users.noreply.github.com", bot.id, s.app.BotLogin)}
	s.mu.Unlock()
	author := req.Author
	if author == nil {
		author = &self
	}
	committer := req.Committer
	if committer == nil {
		committer = author
	}
	a, err := author.line(at)
	if err != nil {
		writeValidation(w, fieldError{Resource: "Commit", Field: "author", Code: "invalid", Message: err.Error()})
		return
	}
	c, err := committer.line(at)
	if err != nil {
		writeValidation(w, fieldError{Resource: "Commit", Field: "committer", Code: "invalid", Message: err.Error()})
		return
	}
	fmt.Fprintf(&head, "author %s\ncommitter %s\n", a, c)
	payload := head.String() + "\n" + *req.Message
	sig := req.Signature
	if sign {
		if sig, err = s.signCommit(payload); err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	raw := payload
	if sig != "" {
		raw = head.String() + "gpgsig " + strings.ReplaceAll(strings.TrimRight(sig, "\n"), "\n", "\n ") + "\n\n" + *req.Message
	}
	sha, err := s.gitInput(rp.dir, nil, []byte(raw), "hash-object", "-t", "commit", "-w", "--stdin")
	if err != nil {
		writeValidation(w, fieldError{Resource: "Commit", Code: "invalid", Message: err.Error()})
		return
	}
	s.writeGitCommit(w, rp, http.StatusCreated, sha)
}

// signatureHeader starts the simulator's commit signatures.
const signatureHeader = "-----BEGIN SIGNED MESSAGE-----"

// signCommit signs payload with the simulator's key, in an armour like
// GitHub's.
func (s *Server) signCommit(payload string) (string, error) {
	sum := sha256.Sum256([]byte(payload))
	sig, err := rsa.SignPKCS1v15(nil, s.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign commit: %w", err)
	}
	return signatureHeader + "\n\n" + base64.StdEncoding.EncodeToString(sig) + "\n-----END SIGNED MESSAGE-----", nil
}

// verify checks sig over payload and answers GitHub's reason.
func (s *Server) verify(sig, payload string) (bool, string) {
	if sig == "" {
		return false, "unsigned"
	}
	body, ok := strings.CutPrefix(sig, signatureHeader+"\n\n")
	if !ok {
		return false, "unknown_signature_type"
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(body, "\n-----END SIGNED MESSAGE-----"))
	if err != nil {
		return false, "malformed_signature"
	}
	sum := sha256.Sum256([]byte(payload))
	if rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], raw) != nil {
		return false, "invalid"
	}
	return true, "valid"
}

// parsedCommit is a commit object as git stores it.
type parsedCommit struct {
	tree              string
	parents           []string
	author, committer gitPerson
	message           string
	signature         string // the gpgsig header, unfolded
	payload           string // the object without its signature: what was signed
}

// readCommit parses commit sha of dir.
func (s *Server) readCommit(dir, sha string) (parsedCommit, error) {
	out, err := s.runGit(context.Background(), dir, nil, "cat-file", "commit", sha)
	if err != nil {
		return parsedCommit{}, err
	}
	head, msg, _ := strings.Cut(string(out), "\n\n")
	c := parsedCommit{message: msg}
	var kept []string
	inSig := false
	for line := range strings.SplitSeq(head, "\n") {
		if inSig && strings.HasPrefix(line, " ") {
			c.signature += "\n" + line[1:]
			continue
		}
		inSig = false
		key, val, _ := strings.Cut(line, " ")
		switch key {
		case "gpgsig":
			c.signature, inSig = val, true
			continue
		case "tree":
			c.tree = val
		case "parent":
			c.parents = append(c.parents, val)
		case "author":
			c.author = parsePerson(val)
		case "committer":
			c.committer = parsePerson(val)
		}
		kept = append(kept, line)
	}
	c.payload = strings.Join(kept, "\n") + "\n\n" + msg
	return c, nil
}

// parsePerson reads "Name <email> 1700000000 +0000".
func parsePerson(v string) gitPerson {
	name, rest, _ := strings.Cut(v, " <")
	email, when, _ := strings.Cut(rest, "> ")
	secs, zone, _ := strings.Cut(when, " ")
	n, _ := strconv.ParseInt(secs, 10, 64)
	t := time.Unix(n, 0).UTC()
	if z, err := time.Parse("-0700", zone); err == nil {
		t = t.In(z.Location())
	}
	return gitPerson{Name: name, Email: email, Date: t.Format(time.RFC3339)}
}

func (s *Server) getGitCommit(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "contents")
	if !ok {
		return
	}
	sha := r.PathValue("commit_sha")
	if s.objectType(rp.dir, sha) != "commit" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	s.writeGitCommit(w, rp, http.StatusOK, sha)
}

// writeGitCommit answers with commit sha as the Git database shows it.
func (s *Server) writeGitCommit(w http.ResponseWriter, rp *repo, status int, sha string) {
	c, err := s.readCommit(rp.dir, sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	parents := []obj{}
	for _, p := range c.parents {
		parents = append(parents, obj{"sha": p, "url": s.gitURL(rp, "commits", p), "html_url": rp.htmlURL(s) + "/commit/" + p})
	}
	writeJSON(w, status, obj{
		"sha": sha, "node_id": stringNodeID("Commit", rp.fullName()+":"+sha),
		"url": s.gitURL(rp, "commits", sha), "html_url": rp.htmlURL(s) + "/commit/" + sha,
		"author":    obj{"name": c.author.Name, "email": c.author.Email, "date": c.author.Date},
		"committer": obj{"name": c.committer.Name, "email": c.committer.Email, "date": c.committer.Date},
		"message":   c.message,
		"tree":      obj{"sha": c.tree, "url": s.gitURL(rp, "trees", c.tree)},
		"parents":   parents, "verification": s.verificationJSON(c),
	})
}

// verificationJSON is the verification object of commit c.
func (s *Server) verificationJSON(c parsedCommit) obj {
	ok, reason := s.verify(c.signature, c.payload)
	v := obj{"verified": ok, "reason": reason, "signature": nil, "payload": nil, "verified_at": nil}
	if c.signature != "" {
		v["signature"], v["payload"] = c.signature, c.payload
	}
	if ok {
		v["verified_at"] = c.committer.Date
	}
	return v
}

// CommitVerification reports how GitHub would show commit sha of repo:
// verified, and the reason.
func (s *Server) CommitVerification(repo, sha string) (bool, string, error) {
	s.mu.Lock()
	rp, err := s.repoLocked(repo)
	s.mu.Unlock()
	if err != nil {
		return false, "", err
	}
	c, err := s.readCommit(rp.dir, sha)
	if err != nil {
		return false, "", err
	}
	ok, reason := s.verify(c.signature, c.payload)
	return ok, reason, nil
}

// stringNodeID is a node id for objects named by a string, not a number.
func stringNodeID(typ, name string) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%03d:%s%s", len(typ), typ, name))
}

// refJSON answers ref (refs/...) at sha.
func (s *Server) refJSON(rp *repo, ref, sha string) obj {
	typ := s.objectType(rp.dir, sha)
	return obj{
		"ref": ref, "node_id": stringNodeID("Ref", rp.fullName()+":"+ref),
		"url":    rp.apiURL(s) + "/git/" + ref,
		"object": obj{"type": typ, "sha": sha, "url": s.gitURL(rp, typ+"s", sha)},
	}
}

// refValue reads ref (refs/...), "" when it does not exist.
func (s *Server) refValue(rp *repo, ref string) string {
	out, err := s.runGit(context.Background(), rp.dir, nil, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// fullRef turns the {ref} of a path ("heads/main") into "refs/heads/main",
// "" when it is not a branch or tag name git accepts.
func (s *Server) fullRef(rp *repo, ref string) string {
	ref = "refs/" + strings.TrimPrefix(ref, "refs/")
	if !strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/tags/") {
		return ""
	}
	if _, err := s.runGit(context.Background(), rp.dir, nil, "check-ref-format", ref); err != nil || path.Clean(ref) != ref {
		return ""
	}
	return ref
}

// refAt resolves a ref name of the git database API to its full name and
// the object it points at; sha is empty when there is no such ref.
func (s *Server) refAt(rp *repo, name string) (ref, sha string) {
	ref = s.fullRef(rp, name)
	if ref == "" {
		return "", ""
	}
	return ref, s.refValue(rp, ref)
}

func (s *Server) getRef(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "contents")
	if !ok {
		return
	}
	ref, sha := s.refAt(rp, r.PathValue("ref"))
	if sha == "" {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(rp, ref, sha))
}

func (s *Server) createRef(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "contents")
	if !ok {
		return
	}
	var req struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if !strings.HasPrefix(req.Ref, "refs/") || strings.Count(req.Ref, "/") < 2 {
		invalidRef(w, "ref", "invalid", "Reference name must start with 'refs/' and have at least two slashes.")
		return
	}
	ref := s.fullRef(rp, req.Ref)
	if ref == "" {
		invalidRef(w, "ref", "invalid", req.Ref+" is not a valid ref name.")
		return
	}
	if s.objectType(rp.dir, req.SHA) == "" {
		invalidRef(w, "sha", "invalid", "Object does not exist")
		return
	}
	// The zero old value makes the creation fail if the ref appeared
	// meanwhile.
	if err := s.moveRef(rp, ref, req.SHA, strings.Repeat("0", 40)); err != nil {
		invalidRef(w, "ref", "already_exists", "Reference already exists")
		return
	}
	writeJSON(w, http.StatusCreated, s.refJSON(rp, ref, req.SHA))
}

func (s *Server) updateRef(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "contents")
	if !ok {
		return
	}
	var req struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	ref, old := s.refAt(rp, r.PathValue("ref"))
	if old == "" {
		invalidRef(w, "ref", "invalid", "Reference does not exist")
		return
	}
	if s.objectType(rp.dir, req.SHA) != "commit" {
		invalidRef(w, "sha", "invalid", "Object does not exist")
		return
	}
	if !req.Force {
		if _, err := s.runGit(context.Background(), rp.dir, nil, "merge-base", "--is-ancestor", old, req.SHA); err != nil {
			invalidRef(w, "sha", "invalid", "Update is not a fast forward")
			return
		}
	}
	// The old value makes the update atomic with the check above: a push
	// in between fails it.
	if err := s.moveRef(rp, ref, req.SHA, old); err != nil {
		invalidRef(w, "sha", "invalid", "Update is not a fast forward")
		return
	}
	writeJSON(w, http.StatusOK, s.refJSON(rp, ref, req.SHA))
}

// invalidRef answers 422 for a field of a git reference request.
func invalidRef(w http.ResponseWriter, field, code, message string) {
	writeValidation(w, fieldError{Resource: "Reference", Field: field, Code: code, Message: message})
}

// moveRef sets ref to sha if it still points at old, as the API does, and
// then does what a push does after a ref moved.
func (s *Server) moveRef(rp *repo, ref, sha, old string) error {
	before, _ := s.branches(rp.dir)
	if _, err := s.runGit(context.Background(), rp.dir, nil, "update-ref", ref, sha, old); err != nil {
		return err
	}
	after, err := s.branches(rp.dir)
	if err != nil {
		s.log.Warn("githubsim: read branches after ref update", "repo", rp.fullName(), "err", err)
		return nil
	}
	s.pushed(rp, before, after)
	return nil
}
