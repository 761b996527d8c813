package github

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// pullFor authorises a pulls-API call and finds the pull request. An
// issue that is not a pull request is Not Found here, as on GitHub.
func (s *Server) pullFor(w http.ResponseWriter, r *http.Request, level string) (*repo, *Issue, bool) {
	rp, is, ok := s.numberedIssue(w, r, "pull_number", level, "pull_requests")
	if !ok {
		return nil, nil, false
	}
	if is.Pull == nil {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, nil, false
	}
	return rp, is, true
}

// view reads a pull request's branches from git. It takes s.mu only to
// copy what it needs, so git never runs under the lock.
func (s *Server) view(rp *repo, is *Issue, full bool) pullView {
	s.mu.Lock()
	head, base := is.Pull.Head, is.Pull.Base
	headDir := rp.dir
	if hr, err := s.repoLocked(is.Pull.HeadRepo); err == nil {
		headDir = hr.dir
	}
	s.mu.Unlock()
	var v pullView
	v.headSHA, _ = s.branchSHA(headDir, head)
	v.baseSHA, _ = s.branchSHA(rp.dir, base)
	if full && headDir == rp.dir {
		v.commits, v.additions, v.deletions, v.files = s.diffStats(rp.dir, v.baseSHA, v.headSHA)
	}
	return v
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	rp, is, ok := s.pullFor(w, r, "read")
	if !ok {
		return
	}
	v := s.view(rp, is, true)
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.pullJSON(rp, is, v, true))
}

// listPulls filters by state (open by default), base and head. GitHub
// reads head only as "owner:branch" and silently ignores any other form,
// returning every pull request; so does the simulator, so that a client
// passing a bare branch name finds out here.
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "read", "pull_requests")
	if !ok {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	headOwner, headRef, _ := strings.Cut(q.Get("head"), ":")
	s.mu.Lock()
	var match []*Issue
	for i := len(rp.issues) - 1; i >= 0; i-- { // newest first, as GitHub sorts by default
		is := rp.issues[i]
		p := is.Pull
		if p == nil || (state != "all" && is.State != state) ||
			(q.Get("base") != "" && p.Base != q.Get("base")) ||
			(headRef != "" && (p.Head != headRef || !strings.EqualFold(strings.Split(p.HeadRepo, "/")[0], headOwner))) {
			continue
		}
		match = append(match, is)
	}
	s.mu.Unlock()
	match = paginate(w, r, match)
	views := make([]pullView, len(match))
	for i, is := range match {
		views[i] = s.view(rp, is, false)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	list := make([]obj, 0, len(match))
	for i, is := range match {
		list = append(list, s.pullJSON(rp, is, views[i], false))
	}
	writeJSON(w, http.StatusOK, list)
}

type pullRequest struct {
	Title string  `json:"title"`
	Head  string  `json:"head"`
	Base  string  `json:"base"`
	Body  *string `json:"body"`
	Draft bool    `json:"draft"`
}

// createPull opens a pull request as the App, refusing what GitHub
// refuses: a missing branch, no commits between the branches, or a second
// open pull request for the same head and base.
func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "pull_requests")
	if !ok {
		return
	}
	var req pullRequest
	if !decodeBody(w, r, &req) {
		return
	}
	switch {
	case req.Title == "":
		writeValidation(w, fieldError{Resource: "PullRequest", Field: "title", Code: "missing_field"})
		return
	case req.Head == "":
		writeValidation(w, fieldError{Resource: "PullRequest", Field: "head", Code: "missing_field"})
		return
	case req.Base == "":
		writeValidation(w, fieldError{Resource: "PullRequest", Field: "base", Code: "missing_field"})
		return
	}
	body := ""
	if req.Body != nil {
		body = *req.Body
	}
	if bodyTooLong(w, "PullRequest", body) {
		return
	}
	s.mu.Lock()
	head := req.Head
	if owner, ref, ok := strings.Cut(req.Head, ":"); ok && strings.EqualFold(owner, rp.owner.login) {
		head = ref
	}
	label := rp.owner.login + ":" + head
	for _, is := range rp.issues {
		if is.Pull != nil && is.State == "open" && is.Pull.Head == head && is.Pull.Base == req.Base && is.Pull.HeadRepo == rp.fullName() {
			s.mu.Unlock()
			writeValidation(w, fieldError{Resource: "PullRequest", Code: "custom", Message: "A pull request already exists for " + label + "."})
			return
		}
	}
	s.mu.Unlock()
	headSHA, err := s.branchSHA(rp.dir, head)
	if err != nil {
		writeValidation(w, fieldError{Resource: "PullRequest", Field: "head", Code: "invalid"})
		return
	}
	baseSHA, err := s.branchSHA(rp.dir, req.Base)
	if err != nil {
		writeValidation(w, fieldError{Resource: "PullRequest", Field: "base", Code: "invalid"})
		return
	}
	if commits, _, _, _ := s.diffStats(rp.dir, baseSHA, headSHA); commits == 0 {
		writeValidation(w, fieldError{Resource: "PullRequest", Code: "custom", Message: fmt.Sprintf("No commits between %s and %s", req.Base, head)})
		return
	}
	s.mu.Lock()
	pull := &Pull{ID: s.newID(), HeadRepo: rp.fullName(), Head: head, Base: req.Base, Draft: req.Draft}
	is := s.addIssueLocked(rp, s.app.BotLogin, req.Title, body, pull)
	s.mu.Unlock()
	v := s.view(rp, is, true)
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Location", fmt.Sprintf("%s/pulls/%d", rp.apiURL(s), is.Number))
	writeJSON(w, http.StatusCreated, s.pullJSON(rp, is, v, true))
	event := s.envelopeLocked(rp, "opened", s.app.BotLogin)
	event["number"] = is.Number
	event["pull_request"] = s.pullJSON(rp, is, v, true)
	s.echo("pull_request", event)
}

// requestReviewers asks collaborators for a review; GitHub refuses anyone
// else.
func (s *Server) requestReviewers(w http.ResponseWriter, r *http.Request) {
	rp, is, ok := s.pullFor(w, r, "write")
	if !ok {
		return
	}
	var req struct {
		Reviewers []string `json:"reviewers"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	s.mu.Lock()
	for _, login := range req.Reviewers {
		if rp.roles[strings.ToLower(login)] == "" {
			s.mu.Unlock()
			writeValidation(w, fieldError{Resource: "PullRequest", Field: "reviewers", Code: "custom",
				Message: "Reviews may only be requested from collaborators. One or more of the users or teams you specified is not a collaborator of the " + rp.fullName() + " repository."})
			return
		}
	}
	for _, login := range req.Reviewers {
		if !containsFold(is.Pull.Reviewers, login) {
			is.Pull.Reviewers = append(is.Pull.Reviewers, s.userLocked(login, "").login)
		}
	}
	s.mu.Unlock()
	v := s.view(rp, is, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusCreated, s.pullJSON(rp, is, v, false))
}

func containsFold(list []string, v string) bool {
	for _, x := range list {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}

func (s *Server) listReviewComments(w http.ResponseWriter, r *http.Request) {
	s.listOfPull(w, r, func(rp *repo, number int) []obj {
		var list []obj
		for _, c := range rp.reviewCs {
			if c.Pull == number {
				list = append(list, s.reviewCommentJSON(rp, c))
			}
		}
		return list
	})
}

func (s *Server) addReviewCommentLocked(rp *repo, c *ReviewComment) *ReviewComment {
	c.ID = s.newID()
	c.Repo = rp.fullName()
	c.Author = s.userLocked(c.Author, "").login
	if c.Side == "" {
		c.Side = "RIGHT"
	}
	c.CreatedAt = now()
	c.UpdatedAt = c.CreatedAt
	rp.reviewCs = append(rp.reviewCs, c)
	s.reviewComments[c.ID] = c
	return c
}

// replyReviewComment answers in a review comment's thread, as agentbot
// does for inline feedback.
func (s *Server) replyReviewComment(w http.ResponseWriter, r *http.Request) {
	id, ok := pathInt(w, r, "comment_id")
	if !ok {
		return
	}
	body, ok := readBody(w, r, "PullRequestReviewComment")
	if !ok {
		return
	}
	s.reviewCommentOrReply(w, r, reviewCommentRequest{Body: body, InReplyTo: id})
}

type reviewCommentRequest struct {
	Body      string `json:"body"`
	CommitID  string `json:"commit_id"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Side      string `json:"side"`
	InReplyTo int64  `json:"in_reply_to"`
}

// createReviewComment comments on a diff line, or replies in a thread
// when in_reply_to is set (go-github's CreateCommentInReplyTo).
func (s *Server) createReviewComment(w http.ResponseWriter, r *http.Request) {
	var req reviewCommentRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Body == "" {
		writeValidation(w, fieldError{Resource: "PullRequestReviewComment", Field: "body", Code: "missing_field"})
		return
	}
	if bodyTooLong(w, "PullRequestReviewComment", req.Body) {
		return
	}
	if req.InReplyTo == 0 && (req.Path == "" || req.Line == 0) {
		writeValidation(w, fieldError{Resource: "PullRequestReviewComment", Field: "path", Code: "missing_field"})
		return
	}
	s.reviewCommentOrReply(w, r, req)
}

func (s *Server) reviewCommentOrReply(w http.ResponseWriter, r *http.Request, req reviewCommentRequest) {
	rp, is, ok := s.pullFor(w, r, "write")
	if !ok {
		return
	}
	if req.CommitID == "" {
		req.CommitID = s.view(rp, is, false).headSHA
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &ReviewComment{Pull: is.Number, ReviewID: s.newID(), Author: s.app.BotLogin, Body: req.Body,
		Path: req.Path, Line: req.Line, Side: req.Side, CommitID: req.CommitID}
	if req.InReplyTo != 0 {
		parent, found := s.reviewComments[req.InReplyTo]
		if !found || parent.Repo != rp.fullName() || parent.Pull != is.Number {
			writeError(w, http.StatusNotFound, "Not Found")
			return
		}
		// GitHub threads replies under the thread's first comment.
		c.InReplyTo = cmp.Or(parent.InReplyTo, parent.ID)
		c.Path, c.Line, c.Side, c.CommitID = parent.Path, parent.Line, parent.Side, parent.CommitID
	}
	writeJSON(w, http.StatusCreated, s.reviewCommentJSON(rp, s.addReviewCommentLocked(rp, c)))
}

type reviewRequest struct {
	CommitID string `json:"commit_id"`
	Body     string `json:"body"`
	Event    string `json:"event"`
	Comments []struct {
		Path string `json:"path"`
		Line int    `json:"line"`
		Side string `json:"side"`
		Body string `json:"body"`
	} `json:"comments"`
}

// createReview submits a review as the App, with its inline comments.
func (s *Server) createReview(w http.ResponseWriter, r *http.Request) {
	rp, is, ok := s.pullFor(w, r, "write")
	if !ok {
		return
	}
	var req reviewRequest
	if !decodeBody(w, r, &req) {
		return
	}
	state, known := map[string]string{"": "PENDING", "APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}[req.Event]
	simple := func(msg string) {
		writeJSON(w, http.StatusUnprocessableEntity, obj{"message": "Unprocessable Entity", "errors": []string{msg},
			"documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request", "status": "422"})
	}
	if !known {
		simple("Event is invalid")
		return
	}
	pv := s.view(rp, is, false)
	if req.CommitID == "" {
		req.CommitID = pv.headSHA
	}
	if len(req.Comments) > 0 {
		lines, err := s.commentable(rp.dir, pv.baseSHA, req.CommitID)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error())
			return
		}
		for _, c := range req.Comments {
			if !lines[c.Path][c.Line] {
				simple("Line could not be resolved")
				return
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if is.Author == s.app.BotLogin && state != "COMMENTED" && state != "PENDING" {
		simple(map[string]string{"APPROVED": "Can not approve your own pull request", "CHANGES_REQUESTED": "Can not request changes on your own pull request"}[state])
		return
	}
	if (state == "COMMENTED" || state == "CHANGES_REQUESTED") && req.Body == "" && len(req.Comments) == 0 {
		simple("Body is required for this event")
		return
	}
	v := &Review{ID: s.newID(), Repo: rp.fullName(), Pull: is.Number, Author: s.app.BotLogin, Body: req.Body, State: state, CommitID: req.CommitID}
	if state != "PENDING" {
		v.SubmittedAt = now()
	}
	rp.reviews = append(rp.reviews, v)
	for _, c := range req.Comments {
		s.addReviewCommentLocked(rp, &ReviewComment{Pull: is.Number, ReviewID: v.ID, Author: s.app.BotLogin, Body: c.Body, Path: c.Path, Line: c.Line, Side: c.Side, CommitID: req.CommitID})
	}
	m := s.reviewJSON(rp, v)
	if v.SubmittedAt.IsZero() {
		delete(m, "submitted_at")
	}
	writeJSON(w, http.StatusOK, m)
}

type checkRunRequest struct {
	Name        *string    `json:"name"`
	HeadSHA     string     `json:"head_sha"`
	Status      *string    `json:"status"`
	Conclusion  *string    `json:"conclusion"`
	ExternalID  *string    `json:"external_id"`
	DetailsURL  *string    `json:"details_url"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
	Output      *struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    string  `json:"text"`
	} `json:"output"`
}

// maxCheckText is GitHub's limit on a check run's output summary and text.
const maxCheckText = 65535

// apply merges a create or update request into c, answering GitHub's
// validation errors itself.
func (req *checkRunRequest) apply(w http.ResponseWriter, c *CheckRun) bool {
	if req.Name != nil {
		c.Name = *req.Name
	}
	if req.ExternalID != nil {
		c.ExternalID = *req.ExternalID
	}
	if req.DetailsURL != nil {
		c.DetailsURL = *req.DetailsURL
	}
	if req.StartedAt != nil {
		c.StartedAt = req.StartedAt.UTC()
	}
	if o := req.Output; o != nil {
		// GitHub checks the body against its JSON schema first.
		for field, v := range map[string]*string{"title": o.Title, "summary": o.Summary} {
			if v == nil {
				writeJSON(w, http.StatusUnprocessableEntity, obj{
					"message":           fmt.Sprintf("Invalid request.\n\n%q wasn't supplied.", field),
					"documentation_url": "https://docs.github.com/rest/checks/runs", "status": "422",
				})
				return false
			}
		}
		if utf8.RuneCountInString(*o.Summary) > maxCheckText || utf8.RuneCountInString(o.Text) > maxCheckText {
			writeValidation(w, fieldError{Resource: "CheckRun", Field: "output", Code: "custom", Message: "Output summary and text are limited to 65535 characters"})
			return false
		}
		c.Title, c.Summary, c.Text = *o.Title, *o.Summary, o.Text
	}
	if req.Status != nil {
		switch *req.Status {
		case "queued", "in_progress", "completed", "waiting", "requested", "pending":
			c.Status = *req.Status
		default:
			writeValidation(w, fieldError{Resource: "CheckRun", Field: "status", Code: "invalid"})
			return false
		}
	}
	if req.Conclusion != nil {
		switch *req.Conclusion {
		case "action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out":
			c.Conclusion, c.Status = *req.Conclusion, "completed"
		default:
			writeValidation(w, fieldError{Resource: "CheckRun", Field: "conclusion", Code: "invalid"})
			return false
		}
	}
	if req.CompletedAt != nil {
		c.CompletedAt = req.CompletedAt.UTC()
	}
	if c.Status == "completed" {
		if c.Conclusion == "" {
			writeValidation(w, fieldError{Resource: "CheckRun", Field: "conclusion", Code: "missing_field"})
			return false
		}
		if c.CompletedAt.IsZero() {
			c.CompletedAt = now()
		}
	}
	return true
}

func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "checks")
	if !ok {
		return
	}
	var req checkRunRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.Name == nil || *req.Name == "" {
		writeValidation(w, fieldError{Resource: "CheckRun", Field: "name", Code: "missing_field"})
		return
	}
	sha, err := s.resolve(rp.dir, req.HeadSHA)
	if err != nil || !strings.HasPrefix(sha, strings.ToLower(req.HeadSHA)) {
		writeValidation(w, fieldError{Resource: "CheckRun", Field: "head_sha", Code: "custom", Message: "No commit found for SHA: " + req.HeadSHA})
		return
	}
	c := &CheckRun{HeadSHA: sha, Status: "queued", StartedAt: now()}
	if !req.apply(w, c) {
		return
	}
	heads, _ := s.branches(rp.dir) // only for pull_requests; empty on failure
	s.mu.Lock()
	defer s.mu.Unlock()
	c.ID, c.Repo = s.newID(), rp.fullName()
	rp.checkRuns = append(rp.checkRuns, c)
	s.checkRuns[c.ID] = c
	writeJSON(w, http.StatusCreated, s.checkRunJSON(rp, c, heads))
}

func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request) {
	rp, ok := s.repoAuth(w, r, "write", "checks")
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "check_run_id")
	if !ok {
		return
	}
	var req checkRunRequest
	if !decodeBody(w, r, &req) {
		return
	}
	heads, _ := s.branches(rp.dir) // only for pull_requests; empty on failure
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found := s.checkRuns[id]
	if !found || c.Repo != rp.fullName() {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	next := *c
	if !req.apply(w, &next) {
		return
	}
	next.Updates++
	*c = next
	writeJSON(w, http.StatusOK, s.checkRunJSON(rp, c, heads))
}
