package github

import (
	"context"

	"github.com/agentbot/agentbot/app"
)

// commentable maps each file a pull request changes, from base to head,
// to the lines of the head's side its diff shows: the only lines GitHub
// takes an inline comment on. A base that shares no history with the head
// is compared as it is.
func (s *Server) commentable(dir, base, head string) (map[string]map[int]bool, error) {
	out, err := s.runGit(context.Background(), dir, nil, "diff", "--no-color", "--no-ext-diff", "--no-textconv", base+"..."+head)
	if err != nil {
		if out, err = s.runGit(context.Background(), dir, nil, "diff", "--no-color", "--no-ext-diff", "--no-textconv", base, head); err != nil {
			return nil, err
		}
	}
	return app.DiffLines(string(out)), nil
}
