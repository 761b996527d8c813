package app

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"
)

// MaxPolicySize bounds a policy file; GitHub's contents API inlines files up
// to 1 MB, and a policy is a few hundred bytes.
const MaxPolicySize = 256 << 10

// CheckPolicySize refuses a policy file above MaxPolicySize; name is how
// the message refers to the file. The worker and "agentbot config
// validate" both call it, so that they refuse the same files.
func CheckPolicySize(name string, size int64) error {
	if size > MaxPolicySize {
		return Errorf(EInvalid, "%s is %d bytes; a policy may have at most %d.", name, size, MaxPolicySize)
	}
	return nil
}

// LoadedPolicy is the policy that governs a task, with where it was read.
type LoadedPolicy struct {
	Policy Policy
	Repo   RepoInfo
	// Commit is the default branch's commit the repository's policy was
	// read at, to be recorded in the task: never the pull request's head.
	Commit string
}

// LoadPolicy reads the policy for a task on repo: the built-in defaults,
// then the organisation's .github repository's .github/agent.yml, then the
// repository's own, each from its default branch, bounded by server.
//
// The files come from the default branch only, so that a pull request
// cannot widen its own permissions. A file that is missing counts as none;
// a broken one is an *Error whose message names the file, line and field,
// fit to be posted as is.
func (i *Installation) LoadPolicy(ctx context.Context, repo string, server ServerConfig) (LoadedPolicy, error) {
	owner, _, err := splitOwnerRepo(repo)
	if err != nil {
		return LoadedPolicy{}, err
	}
	ctx, cancel := i.app.withTimeout(ctx)
	defer cancel()
	info, sha, own, err := i.policyFile(ctx, repo)
	if err != nil {
		return LoadedPolicy{}, err
	}
	var org *RawPolicy
	if orgRepo := owner + "/.github"; orgRepo != repo {
		_, _, org, err = i.policyFile(ctx, orgRepo)
		if err != nil && ErrorCode(err) != ENotFound {
			return LoadedPolicy{}, err
		}
	}
	p, err := BuildPolicy(server, org, own)
	if err != nil {
		return LoadedPolicy{}, fmt.Errorf("policy of %s: %w", repo, err)
	}
	return LoadedPolicy{Policy: p, Repo: info, Commit: sha}, nil
}

// policyFile reads repo's policy file at its default branch's commit; the
// file is nil when the repository has none.
func (i *Installation) policyFile(ctx context.Context, repo string) (RepoInfo, string, *RawPolicy, error) {
	info, err := i.Repository(ctx, repo)
	if err != nil {
		return RepoInfo{}, "", nil, err
	}
	owner, name, _ := splitOwnerRepo(repo)
	// Resolve the branch to a commit first, so that the file read and the
	// commit recorded are the same even if the branch moves meanwhile.
	branch, _, err := i.gh.Repositories.GetBranch(ctx, owner, name, info.DefaultBranch, 1)
	if isStatus(err, http.StatusNotFound) {
		return info, "", nil, nil // an empty repository: no commit, no file
	}
	if err != nil {
		return RepoInfo{}, "", nil, fmt.Errorf("resolve %s's default branch %s: %w", repo, info.DefaultBranch, err)
	}
	sha := branch.GetCommit().GetSHA()
	file, _, _, err := i.gh.Repositories.GetContents(ctx, owner, name, PolicyPath, &github.RepositoryContentGetOptions{Ref: sha})
	switch {
	case isStatus(err, http.StatusNotFound):
		return info, sha, nil, nil
	case err != nil:
		return RepoInfo{}, "", nil, fmt.Errorf("read %s of %s@%s: %w", PolicyPath, repo, sha, err)
	case file == nil || file.GetType() != "file":
		return RepoInfo{}, "", nil, Errorf(EInvalid, "%s in %s is not a file.", PolicyPath, repo)
	}
	if err := CheckPolicySize(PolicyPath+" in "+repo, int64(file.GetSize())); err != nil {
		return RepoInfo{}, "", nil, err
	}
	data, err := file.GetContent()
	if err != nil {
		return RepoInfo{}, "", nil, fmt.Errorf("decode %s of %s@%s: %w", PolicyPath, repo, sha, err)
	}
	raw, err := ParsePolicy(fmt.Sprintf("%s@%.12s:%s", repo, sha, PolicyPath), []byte(data))
	if err != nil {
		return RepoInfo{}, "", nil, err
	}
	return info, sha, raw, nil
}
