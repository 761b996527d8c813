package githubsim

import (
	"fmt"
	"net/http"
)

// listReviews answers pulls/list-reviews: the pull request's reviews,
// oldest first. Pending reviews are their author's alone, and the App
// submits none it leaves pending, so all are listed.
func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	rp, is, ok := s.pullFor(w, r, "read")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []obj
	for _, v := range rp.reviews {
		if v.Pull == is.Number {
			m := s.reviewJSON(rp, v)
			if v.SubmittedAt.IsZero() {
				delete(m, "submitted_at")
			}
			list = append(list, m)
		}
	}
	writeJSON(w, http.StatusOK, paginate(w, r, list))
}

// AddReview submits author's review of pull request number (state
// APPROVED, CHANGES_REQUESTED or COMMENTED) without a webhook, and returns
// its id. DeliverReview also sends the event.
func (s *Server) AddReview(repo string, number int, author, state, body string) (int64, error) {
	if state != "APPROVED" && state != "CHANGES_REQUESTED" && state != "COMMENTED" {
		return 0, fmt.Errorf("githubsim: review state %q is not APPROVED, CHANGES_REQUESTED or COMMENTED", state)
	}
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return 0, err
	}
	v := s.view(rp, is, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	rv := &Review{ID: s.newID(), Repo: rp.fullName(), Pull: number, Author: s.userLocked(author, "").login, Body: body, State: state, CommitID: v.headSHA, SubmittedAt: now()}
	rp.reviews = append(rp.reviews, rv)
	return rv.ID, nil
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
