package github

import (
	"context"
	"fmt"
	"net/http"
)

// InlineComment is one inline comment of a submitted review.
type InlineComment struct {
	Path string
	Line int
	Body string
}

// webhookReviewState checks a review state of the REST API (APPROVED,
// CHANGES_REQUESTED or COMMENTED) and returns its webhook spelling.
func webhookReviewState(state string) (string, error) {
	lower, ok := map[string]string{"APPROVED": "approved", "CHANGES_REQUESTED": "changes_requested", "COMMENTED": "commented"}[state]
	if !ok {
		return "", fmt.Errorf("githubsim: review state %q is not APPROVED, CHANGES_REQUESTED or COMMENTED", state)
	}
	return lower, nil
}

// addReviewLocked records author's review, submitted now, of pull request
// number at commit head.
func (s *Server) addReviewLocked(rp *repo, number int, author, state, body, head string) *Review {
	rv := &Review{ID: s.newID(), Repo: rp.fullName(), Pull: number, Author: s.userLocked(author, "").login, Body: body, State: state, CommitID: head, SubmittedAt: now()}
	rp.reviews = append(rp.reviews, rv)
	return rv
}

// DeliverReviewWithComments submits author's review of pull request
// number with its inline comments, as GitHub's "Finish your review"
// does, and delivers the pull_request_review "submitted" event. It
// returns the review's id and its comments' ids.
func (s *Server) DeliverReviewWithComments(ctx context.Context, url, repo string, number int, author, state, body string, comments []InlineComment) (int64, []int64, *http.Response, error) {
	lower, err := webhookReviewState(state)
	if err != nil {
		return 0, nil, nil, err
	}
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return 0, nil, nil, err
	}
	v := s.view(rp, is, false)
	s.mu.Lock()
	rv := s.addReviewLocked(rp, number, author, state, body, v.headSHA)
	ids := make([]int64, 0, len(comments))
	for _, c := range comments {
		rc := s.addReviewCommentLocked(rp, &ReviewComment{Pull: number, ReviewID: rv.ID, Author: author, Body: c.Body, Path: c.Path, Line: c.Line, CommitID: v.headSHA})
		ids = append(ids, rc.ID)
	}
	payload := s.envelopeLocked(rp, "submitted", author)
	review := s.reviewJSON(rp, rv)
	review["state"] = lower // webhooks spell it in lower case, the REST API in upper
	payload["review"] = review
	payload["pull_request"] = s.pullJSON(rp, is, v, false)
	s.mu.Unlock()
	resp, err := s.Deliver(ctx, url, "pull_request_review", payload)
	return rv.ID, ids, resp, err
}

// listReviewCommentsOf answers pulls/list-comments-for-review: a
// review's inline comments, without the replies in their threads.
func (s *Server) listReviewCommentsOf(w http.ResponseWriter, r *http.Request) {
	rp, is, ok := s.pullFor(w, r, "read")
	if !ok {
		return
	}
	id, ok := pathInt(w, r, "review_id")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, v := range rp.reviews {
		found = found || (v.ID == id && v.Pull == is.Number)
	}
	if !found {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	list := []obj{}
	for _, c := range rp.reviewCs {
		if c.Pull == is.Number && c.ReviewID == id && c.InReplyTo == 0 {
			m := s.reviewCommentJSON(rp, c)
			delete(m, "reactions") // review-comment lists carry no reactions rollup
			list = append(list, m)
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}
