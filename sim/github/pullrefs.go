package github

import (
	"context"
	"fmt"
)

// setPullRef points the base repository's refs/pull/N/head at the pull
// request's head, fetching it from the fork when it is one, as GitHub
// keeps it: a fork's commits are reachable from the base repository.
func (s *Server) setPullRef(base, head *repo, branch string, number int) error {
	_, err := s.runGit(context.Background(), base.dir, nil, "fetch", "--quiet", "--no-tags", head.dir,
		fmt.Sprintf("+refs/heads/%s:refs/pull/%d/head", branch, number))
	if err != nil {
		return fmt.Errorf("githubsim: refs/pull/%d/head: %w", number, err)
	}
	return nil
}
