package github

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The ways GitHub merges a pull request.
const (
	MergeCommit = "merge"  // a merge commit with the base and the head as parents
	MergeSquash = "squash" // one commit on the base with the whole change
	MergeRebase = "rebase" // the head's commits replayed on the base, one by one
)

// Merge merges pull request number as user by method (MergeCommit,
// MergeSquash or MergeRebase), as the merge button does: the base branch
// moves to the new commit, the pull request is closed and merged, and its
// merge_commit_sha is the merge commit, the squashed commit or the last
// rebased commit. The head branch stays. A conflict is an error.
func (s *Server) Merge(repo string, number int, method, user string) (sha string, err error) {
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	p := *is.Pull
	title, state := is.Title, is.State
	s.mu.Unlock()
	if state != "open" || p.HeadRepo != rp.fullName() {
		return "", fmt.Errorf("githubsim: %s#%d is %s or from a fork: the simulator merges open pull requests of one repository", repo, number, state)
	}
	v := s.view(rp, is, false)
	if v.headSHA == "" || v.baseSHA == "" {
		return "", fmt.Errorf("githubsim: %s#%d: head or base branch is gone", repo, number)
	}
	g, err := s.newScratch(rp)
	if err != nil {
		return "", err
	}
	defer g.close()
	author := g.identity(user)
	switch method {
	case MergeCommit:
		tree, err := g.mergeTree(v.baseSHA, v.headSHA)
		if err != nil {
			return "", err
		}
		msg := fmt.Sprintf("Merge pull request #%d from %s/%s\n\n%s", number, rp.owner.login, p.Head, title)
		sha, err = g.commitTree(author, tree, msg, v.baseSHA, v.headSHA)
		if err != nil {
			return "", err
		}
	case MergeSquash:
		tree, err := g.mergeTree(v.baseSHA, v.headSHA)
		if err != nil {
			return "", err
		}
		if sha, err = g.commitTree(author, tree, fmt.Sprintf("%s (#%d)", title, number), v.baseSHA); err != nil {
			return "", err
		}
	case MergeRebase:
		if sha, err = g.replay(v.baseSHA, v.headSHA); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("githubsim: merge method %q is not merge, squash or rebase", method)
	}
	if err := g.moveBranch(p.Base, sha, v.baseSHA); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	is.State, is.UpdatedAt = "closed", t
	is.Pull.Merged = &PullMerge{Commit: sha, By: s.userLocked(user, "").login, At: t}
	return sha, nil
}

// PullMerge is how a pull request was merged.
type PullMerge struct {
	Commit string // merge_commit_sha
	By     string
	At     time.Time
}

// DeliverMerge merges pull request number as Merge does and delivers the
// pull_request "closed" event GitHub sends for it, merged true. It returns
// the merge commit.
func (s *Server) DeliverMerge(ctx context.Context, url, repo string, number int, method, user string) (string, *http.Response, error) {
	sha, err := s.Merge(repo, number, method, user)
	if err != nil {
		return "", nil, err
	}
	rp, is, err := s.pullLookup(repo, number)
	if err != nil {
		return "", nil, err
	}
	v := s.view(rp, is, true)
	s.mu.Lock()
	payload := s.envelopeLocked(rp, "closed", user)
	payload["number"] = number
	payload["pull_request"] = s.pullJSON(rp, is, v, true)
	s.mu.Unlock()
	resp, err := s.Deliver(ctx, url, "pull_request", payload)
	return sha, resp, err
}

// Commit commits files (path -> content) on branch as author, on top of
// its head, as a person pushing to it does, and returns the commit.
func (s *Server) Commit(repo, branch, author, message string, files map[string]string) (string, error) {
	rp, head, g, err := s.branchScratch(repo, branch)
	if err != nil {
		return "", err
	}
	defer g.close()
	if _, err := g.git("read-tree", head); err != nil {
		return "", err
	}
	for _, path := range sortedKeys(files) {
		tmp := filepath.Join(g.tmp, "blob")
		if err := os.WriteFile(tmp, []byte(files[path]), 0o600); err != nil {
			return "", err
		}
		blob, err := g.git("hash-object", "-w", "--", tmp)
		if err != nil {
			return "", err
		}
		if _, err := g.git("update-index", "--add", "--cacheinfo", "100644,"+blob+","+path); err != nil {
			return "", err
		}
	}
	tree, err := g.git("write-tree")
	if err != nil {
		return "", err
	}
	sha, err := g.commitTree(g.identity(author), tree, message, head)
	if err != nil {
		return "", err
	}
	if err := g.moveBranch(branch, sha, head); err != nil {
		return "", fmt.Errorf("githubsim: commit on %s of %s: %w", branch, rp.fullName(), err)
	}
	return sha, nil
}

// RevertCommit commits on branch, as author, the revert of commit (of its
// first parent's side for a merge commit) with git's message, "This
// reverts commit <sha>.", and returns the new commit.
func (s *Server) RevertCommit(repo, branch, commit, author string) (string, error) {
	_, head, g, err := s.branchScratch(repo, branch)
	if err != nil {
		return "", err
	}
	defer g.close()
	subject, err := g.git("log", "-1", "--format=%s", commit)
	if err != nil {
		return "", err
	}
	if _, err := g.git("read-tree", head); err != nil {
		return "", err
	}
	if err := g.apply(commit+"^1", commit, true); err != nil {
		return "", err
	}
	tree, err := g.git("write-tree")
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("Revert %q\n\nThis reverts commit %s.\n", subject, commit)
	sha, err := g.commitTree(g.identity(author), tree, msg, head)
	if err != nil {
		return "", err
	}
	return sha, g.moveBranch(branch, sha, head)
}

// DeliverPush delivers the push event of branch moving from before to
// after, with the commits in between as GitHub lists them (oldest first,
// at most 20).
func (s *Server) DeliverPush(ctx context.Context, url, repo, branch, before, after, pusher string) (*http.Response, error) {
	rp, _, g, err := s.branchScratch(repo, branch)
	if err != nil {
		return nil, err
	}
	defer g.close()
	out, err := g.git("log", "--reverse", "--format=%H%x00%T%x00%an%x00%ae%x00%cn%x00%ce%x00%cI%x00%B%x1e", before+".."+after)
	if err != nil {
		return nil, err
	}
	var commits []obj
	for rec := range strings.SplitSeq(out, "\x1e") {
		f := strings.SplitN(strings.TrimLeft(rec, "\n"), "\x00", 8)
		if len(f) != 8 {
			continue
		}
		commits = append(commits, obj{
			"id": f[0], "tree_id": f[1], "distinct": true, "message": strings.TrimRight(f[7], "\n"), "timestamp": f[6],
			"url":    rp.htmlURL(s) + "/commit/" + f[0],
			"author": obj{"name": f[2], "email": f[3], "username": f[2]}, "committer": obj{"name": f[4], "email": f[5], "username": f[4]},
			"added": []string{}, "removed": []string{}, "modified": []string{},
		})
	}
	if len(commits) > 20 {
		commits = commits[len(commits)-20:]
	}
	s.mu.Lock()
	payload := s.envelopeLocked(rp, "", pusher)
	s.mu.Unlock()
	delete(payload, "action")
	payload["ref"], payload["before"], payload["after"] = "refs/heads/"+branch, before, after
	payload["base_ref"], payload["created"], payload["deleted"], payload["forced"] = nil, false, false, false
	payload["compare"] = rp.htmlURL(s) + "/compare/" + before[:12] + "..." + after[:12]
	payload["pusher"] = obj{"name": pusher, "email": pusher + "@users.noreply.github.com"}
	payload["commits"] = commits
	payload["head_commit"] = nil
	if len(commits) > 0 {
		payload["head_commit"] = commits[len(commits)-1]
	}
	return s.Deliver(ctx, url, "push", payload)
}

// CreateBranch creates branch on repo at the commit at, as a person
// pushing a new branch does.
func (s *Server) CreateBranch(repo, branch, at string) error {
	s.mu.Lock()
	rp, err := s.repoLocked(repo)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	g, err := s.newScratch(rp)
	if err != nil {
		return err
	}
	defer g.close()
	_, err = g.git("update-ref", "refs/heads/"+branch, at, strings.Repeat("0", len(at)))
	return err
}

// GitDir returns the bare repository behind repo, for tests that read its
// history with git.
func (s *Server) GitDir(repo string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, err := s.repoLocked(repo)
	if err != nil {
		return "", err
	}
	return rp.dir, nil
}

// scratch runs git on a repository's bare directory with an index of its
// own in a temporary directory, so that commits are made without a work
// tree.
type scratch struct {
	s    *Server
	dir  string
	tmp  string
	repo string
}

func (s *Server) newScratch(rp *repo) (*scratch, error) {
	tmp, err := os.MkdirTemp("", "githubsim-index-")
	if err != nil {
		return nil, err
	}
	return &scratch{s: s, dir: rp.dir, tmp: tmp, repo: rp.fullName()}, nil
}

// branchScratch finds repo and the head of branch.
func (s *Server) branchScratch(repo, branch string) (*repo, string, *scratch, error) {
	s.mu.Lock()
	rp, err := s.repoLocked(repo)
	s.mu.Unlock()
	if err != nil {
		return nil, "", nil, err
	}
	head, err := s.branchSHA(rp.dir, branch)
	if err != nil {
		return nil, "", nil, fmt.Errorf("githubsim: %s has no branch %s", repo, branch)
	}
	g, err := s.newScratch(rp)
	if err != nil {
		return nil, "", nil, err
	}
	return rp, head, g, nil
}

func (g *scratch) close() { os.RemoveAll(g.tmp) }

func (g *scratch) gitEnv(env []string, args ...string) (string, error) {
	env = append([]string{"GIT_INDEX_FILE=" + filepath.Join(g.tmp, "index")}, env...)
	out, err := g.s.runGit(context.Background(), g.dir, env, args...)
	if err != nil {
		return "", fmt.Errorf("githubsim: %s: %w", g.repo, err)
	}
	return strings.TrimSpace(string(out)), nil
}

func (g *scratch) git(args ...string) (string, error) { return g.gitEnv(nil, args...) }

// identity is the author and committer environment of user's commits.
func (g *scratch) identity(user string) []string {
	email := user + "@users.noreply.github.com"
	return []string{"GIT_AUTHOR_NAME=" + user, "GIT_AUTHOR_EMAIL=" + email, "GIT_COMMITTER_NAME=" + user, "GIT_COMMITTER_EMAIL=" + email}
}

// mergeTree merges two commits' trees and returns the result's tree.
func (g *scratch) mergeTree(a, b string) (string, error) {
	out, err := g.git("merge-tree", "--write-tree", "--no-messages", a, b)
	if err != nil {
		return "", fmt.Errorf("githubsim: merge conflict or failure: %w", err)
	}
	tree, _, _ := strings.Cut(out, "\n")
	return tree, nil
}

func (g *scratch) commitTree(identity []string, tree, message string, parents ...string) (string, error) {
	args := []string{"commit-tree", tree, "-m", message}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	return g.gitEnv(identity, args...)
}

// apply applies the change from one commit to another (reversed when
// reverse is set) to the index.
func (g *scratch) apply(from, to string, reverse bool) error {
	patch, err := g.s.runGit(context.Background(), g.dir, nil, "diff-tree", "-p", "--binary", "--no-renames", from, to)
	if err != nil {
		return fmt.Errorf("githubsim: %s: %w", g.repo, err)
	}
	file := filepath.Join(g.tmp, "patch")
	if err := os.WriteFile(file, patch, 0o600); err != nil {
		return err
	}
	args := []string{"apply", "--cached"}
	if reverse {
		args = append(args, "-R")
	}
	_, err = g.git(append(args, file)...)
	return err
}

// replay commits the head's own commits again on top of base, keeping
// their authors and messages, and returns the last one.
func (g *scratch) replay(base, head string) (string, error) {
	mergeBase, err := g.git("merge-base", base, head)
	if err != nil {
		return "", err
	}
	list, err := g.git("rev-list", "--reverse", "--no-merges", mergeBase+".."+head)
	if err != nil {
		return "", err
	}
	cur := base
	for _, c := range slices.DeleteFunc(strings.Split(list, "\n"), func(s string) bool { return s == "" }) {
		if _, err := g.git("read-tree", cur); err != nil {
			return "", err
		}
		if err := g.apply(c+"^", c, false); err != nil {
			return "", err
		}
		tree, err := g.git("write-tree")
		if err != nil {
			return "", err
		}
		who, err := g.git("log", "-1", "--format=%an%x00%ae%x00%aI%x00%B", c)
		if err != nil {
			return "", err
		}
		f := strings.SplitN(who, "\x00", 4)
		if len(f) != 4 {
			return "", fmt.Errorf("githubsim: read commit %s", c)
		}
		env := []string{"GIT_AUTHOR_NAME=" + f[0], "GIT_AUTHOR_EMAIL=" + f[1], "GIT_AUTHOR_DATE=" + f[2]}
		if cur, err = g.commitTree(env, tree, f[3], cur); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// moveBranch moves branch from old to sha, failing if it moved meanwhile.
func (g *scratch) moveBranch(branch, sha, old string) error {
	_, err := g.git("update-ref", "refs/heads/"+branch, sha, old)
	return err
}
