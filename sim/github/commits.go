package github

import (
	"encoding/base64"
	"net/http"
	"strings"
)

const commitDocs = "https://docs.github.com/rest/commits/commits#get-a-commit"

// getCommit serves one commit by SHA, branch or tag (repos/get-commit):
// its message, tree, parents and signature verification, read as the git
// database reads them. The diff GitHub adds (files, stats) is
// left out: nothing reads it here, and a client that needs a tree reads
// the tree.
func (s *Server) getCommit(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "contents")
	if !ok {
		return
	}
	ref := r.PathValue("ref")
	sha, err := s.resolve(rp.dir, ref)
	if err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, obj{"message": "No commit found for SHA: " + ref, "documentation_url": commitDocs, "status": "422"})
		return
	}
	c, err := s.readCommit(rp.dir, sha)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "Server Error")
		return
	}
	api := rp.apiURL(s)
	parents := []obj{}
	for _, p := range c.parents {
		parents = append(parents, obj{"sha": p, "url": api + "/commits/" + p, "html_url": rp.htmlURL(s) + "/commit/" + p})
	}
	writeJSON(w, http.StatusOK, obj{
		"sha": sha, "node_id": base64.StdEncoding.EncodeToString([]byte("06:Commit" + rp.fullName() + ":" + sha)),
		"url": api + "/commits/" + sha, "html_url": rp.htmlURL(s) + "/commit/" + sha,
		"comments_url": api + "/commits/" + sha + "/comments",
		"commit": obj{
			"url":           api + "/git/commits/" + sha,
			"author":        obj{"name": c.author.Name, "email": c.author.Email, "date": c.author.Date},
			"committer":     obj{"name": c.committer.Name, "email": c.committer.Email, "date": c.committer.Date},
			"message":       strings.TrimRight(c.message, "\n"),
			"comment_count": 0,
			"tree":          obj{"sha": c.tree, "url": api + "/git/trees/" + c.tree},
			"verification":  s.verificationJSON(c),
		},
		// Commits are not linked to accounts here, as on GitHub for an
		// email no account has claimed.
		"author": nil, "committer": nil,
		"parents": parents,
	})
}
