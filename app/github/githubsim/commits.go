package githubsim

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
)

const commitDocs = "https://docs.github.com/rest/commits/commits#get-a-commit"

// getCommit serves one commit by SHA, branch or tag (repos/get-commit):
// its message, tree and parents. The diff GitHub adds (files, stats) is
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
	// One NUL-separated record: tree, parents, author, committer, message.
	out, err := s.runGit(context.Background(), rp.dir, nil, "show", "-s", "--format=%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B", sha)
	f := strings.SplitN(string(out), "\x00", 9)
	if err != nil || len(f) != 9 {
		writeError(w, http.StatusInternalServerError, "Server Error")
		return
	}
	api := rp.apiURL(s)
	parents := []obj{}
	for _, p := range strings.Fields(f[1]) {
		parents = append(parents, obj{"sha": p, "url": api + "/commits/" + p, "html_url": rp.htmlURL(s) + "/commit/" + p})
	}
	writeJSON(w, http.StatusOK, obj{
		"sha": sha, "node_id": base64.StdEncoding.EncodeToString([]byte("06:Commit" + rp.fullName() + ":" + sha)),
		"url": api + "/commits/" + sha, "html_url": rp.htmlURL(s) + "/commit/" + sha,
		"comments_url": api + "/commits/" + sha + "/comments",
		"commit": obj{
			"url":           api + "/git/commits/" + sha,
			"author":        obj{"name": f[2], "email": f[3], "date": f[4]},
			"committer":     obj{"name": f[5], "email": f[6], "date": f[7]},
			"message":       strings.TrimRight(f[8], "\n"),
			"comment_count": 0,
			"tree":          obj{"sha": f[0], "url": api + "/git/trees/" + f[0]},
			"verification":  obj{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil, "verified_at": nil},
		},
		// Commits are not linked to accounts here, as on GitHub for an
		// email no account has claimed.
		"author": nil, "committer": nil,
		"parents": parents,
	})
}
