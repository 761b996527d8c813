package github

import (
	"fmt"
	"net/http"
)

// listReviews answers pulls/list-reviews: the pull request's reviews,
// oldest first. Pending reviews are their author's alone, and the App
// submits none it leaves pending, so all are listed.
func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	s.listOfPull(w, r, func(rp *repo, number int) []obj {
		var list []obj
		for _, v := range rp.reviews {
			if v.Pull == number {
				m := s.reviewJSON(rp, v)
				if v.SubmittedAt.IsZero() {
					delete(m, "submitted_at")
				}
				list = append(list, m)
			}
		}
		return list
	})
}

// listOfPull answers a list endpoint of the request's pull request: list
// gives all its items, under the lock, and the page asked for is written.
func (s *Server) listOfPull(w http.ResponseWriter, r *http.Request, list func(rp *repo, number int) []obj) {
	rp, is, ok := s.pullFor(w, r, "read")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, paginate(w, r, list(rp, is.Number)))
}

// AddReview submits author's review of pull request number (state
// APPROVED, CHANGES_REQUESTED or COMMENTED) without a webhook, and returns
// its id. DeliverReview also sends the event.
func (s *Server) AddReview(repo string, number int, author, state, body string) (int64, error) {
	if _, err := webhookReviewState(state); err != nil {
		return 0, err
	}
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return 0, err
	}
	v := s.view(rp, is, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addReviewLocked(rp, number, author, state, body, v.headSHA).ID, nil
}

// AddReviewComment comments as author on line of path in pull request
// number, in review reviewID (0: a comment of its own) or, when inReplyTo
// is set, as a reply in that comment's thread; no webhook is sent. It
// returns the comment's id.
func (s *Server) AddReviewComment(repo string, number int, reviewID int64, author, path string, line int, body string, inReplyTo int64) (int64, error) {
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return 0, err
	}
	v := s.view(rp, is, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &ReviewComment{Pull: number, ReviewID: reviewID, Author: author, Body: body, Path: path, Line: line, CommitID: v.headSHA}
	if c.ReviewID == 0 {
		c.ReviewID = s.newID()
	}
	if inReplyTo != 0 {
		parent, ok := s.reviewComments[inReplyTo]
		if !ok || parent.Repo != rp.fullName() || parent.Pull != number {
			return 0, fmt.Errorf("githubsim: no review comment %d on %s#%d", inReplyTo, repo, number)
		}
		c.InReplyTo = parent.ID
		if parent.InReplyTo != 0 {
			c.InReplyTo = parent.InReplyTo
		}
		c.Path, c.Line = parent.Path, parent.Line
	}
	return s.addReviewCommentLocked(rp, c).ID, nil
}
