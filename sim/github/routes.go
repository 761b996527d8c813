package github

import (
	"net/http"
	"strings"
)

// routes is the whole URL space: REST under /api/v3, the manifest web
// flow, and git smart HTTP for everything else.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	api := func(pattern string, h http.HandlerFunc) {
		method, path, _ := strings.Cut(pattern, " ")
		mux.Handle(method+" /api/v3"+path, s.common(h))
	}
	api("GET /app", s.appAuth(s.getApp))
	api("GET /app/installations/{installation_id}", s.appAuth(s.getInstallation))
	api("POST /app/installations/{installation_id}/access_tokens", s.appAuth(s.createToken))
	api("GET /repos/{owner}/{repo}/installation", s.appAuth(s.getRepoInstallation))
	api("POST /app-manifests/{code}/conversions", s.convertManifest)

	api("GET /repos/{owner}/{repo}", s.getRepo)
	api("GET /repos/{owner}/{repo}/collaborators/{username}/permission", s.getPermission)
	api("GET /repos/{owner}/{repo}/contents/{path...}", s.getContent)
	api("GET /repos/{owner}/{repo}/branches/{branch...}", s.getBranch)
	api("GET /repos/{owner}/{repo}/commits/{ref}", s.getCommit)

	api("GET /repos/{owner}/{repo}/issues/{issue_number}", s.getIssue)
	api("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", s.listComments)
	api("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", s.createComment)
	api("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", s.updateComment)
	api("POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions", s.reactToComment)
	api("POST /repos/{owner}/{repo}/issues/{issue_number}/reactions", s.reactToIssue)
	api("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", s.addLabels)

	api("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	api("POST /repos/{owner}/{repo}/pulls", s.createPull)
	api("GET /repos/{owner}/{repo}/pulls/{pull_number}", s.getPull)
	api("POST /repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers", s.requestReviewers)
	api("GET /repos/{owner}/{repo}/pulls/{pull_number}/comments", s.listReviewComments)
	api("POST /repos/{owner}/{repo}/pulls/{pull_number}/comments", s.createReviewComment)
	api("POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies", s.replyReviewComment)
	api("POST /repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions", s.reactToReviewComment)
	api("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", s.createReview)
	api("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", s.listReviews)
	api("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments", s.listReviewCommentsOf)

	api("POST /repos/{owner}/{repo}/check-runs", s.createCheckRun)
	api("PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}", s.updateCheckRun)
	api("GET /repos/{owner}/{repo}/check-runs/{check_run_id}/annotations", s.listAnnotations)
	api("GET /repos/{owner}/{repo}/commits/{ref}/check-suites", s.listSuitesForRef)
	api("GET /repos/{owner}/{repo}/check-suites/{check_suite_id}/check-runs", s.listRunsForSuite)
	api("GET /repos/{owner}/{repo}/actions/jobs/{job_id}/logs", s.jobLogs)
	mux.HandleFunc("GET /_logs/jobs/{job_id}", s.serveLog)

	s.gitdbRoutes(api)
	mux.Handle("POST /api/graphql", s.common(http.HandlerFunc(s.graphql)))

	mux.HandleFunc("POST /settings/apps/new", s.newApp)
	mux.HandleFunc("POST /organizations/{org}/settings/apps/new", s.newApp)
	mux.HandleFunc("GET /user-attachments/assets/{id}", s.getAttachment)
	mux.HandleFunc("/{owner}/{repo}/{rest...}", s.serveGitOrNotFound)
	return s.withFaults(mux)
}

// serveGitOrNotFound takes what no other route matched: git for
// /OWNER/REPO.git/..., GitHub's JSON 404 for unknown API paths.
func (s *Server) serveGitOrNotFound(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.PathValue("repo"), ".git") {
		s.serveGit(w, r)
		return
	}
	writeError(w, http.StatusNotFound, "Not Found")
}
