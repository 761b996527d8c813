package github

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// LoadPolicy reads the policy for a task on repo: the built-in defaults,
// then the organisation's .github repository's .github/agent.yml, then the
// repository's own, each from its default branch, bounded by server.
//
// The files come from the default branch only, so that a pull request
// cannot widen its own permissions. A file that is missing counts as none;
// a broken one is an *Error whose message names the file, line and field,
// fit to be posted as is.
func (i *Installation) LoadPolicy(ctx context.Context, repo string, server policy.ServerConfig) (policy.LoadedPolicy, error) {
	owner, _, err := splitOwnerRepo(repo)
	if err != nil {
		return policy.LoadedPolicy{}, err
	}
	ctx, cancel := i.parent.withTimeout(ctx)
	defer cancel()
	info, sha, own, err := i.policyFile(ctx, repo)
	if err != nil {
		return policy.LoadedPolicy{}, err
	}
	var org *policy.RawPolicy
	if orgRepo := owner + "/.github"; !strings.EqualFold(orgRepo, repo) {
		// The task's token reaches its own repository only; the
		// organisation's defaults are read with a token of their own that
		// can read nothing but them.
		orgClient, err := i.parent.client(i.id, orgRepo, policyPermissions)
		if err != nil {
			return policy.LoadedPolicy{}, err
		}
		_, _, org, err = orgClient.policyFile(ctx, orgRepo)
		if err != nil && app.ErrorCode(err) != app.ENotFound {
			return policy.LoadedPolicy{}, err
		}
	}
	p, err := policy.BuildPolicy(server, org, own)
	if err != nil {
		return policy.LoadedPolicy{}, fmt.Errorf("policy of %s: %w", repo, err)
	}
	return policy.LoadedPolicy{Policy: p, Repo: info, Commit: sha}, nil
}

// policyFile reads repo's policy file at its default branch's commit; the
// file is nil when the repository has none.
func (i *Installation) policyFile(ctx context.Context, repo string) (app.RepoInfo, string, *policy.RawPolicy, error) {
	info, err := i.Repository(ctx, repo)
	if err != nil {
		return app.RepoInfo{}, "", nil, err
	}
	owner, name, _ := splitOwnerRepo(repo)
	// Resolve the branch to a commit first, so that the file read and the
	// commit recorded are the same even if the branch moves meanwhile.
	branch, _, err := i.api.Repositories.GetBranch(ctx, owner, name, info.DefaultBranch, 1)
	if isStatus(err, http.StatusNotFound) {
		return info, "", nil, nil // an empty repository: no commit, no file
	}
	if err != nil {
		return app.RepoInfo{}, "", nil, fmt.Errorf("resolve %s's default branch %s: %w", repo, info.DefaultBranch, err)
	}
	sha := branch.GetCommit().GetSHA()
	file, _, _, err := i.api.Repositories.GetContents(ctx, owner, name, policy.PolicyPath, &gh.RepositoryContentGetOptions{Ref: sha})
	switch {
	case isStatus(err, http.StatusNotFound):
		return info, sha, nil, nil
	case err != nil:
		return app.RepoInfo{}, "", nil, fmt.Errorf("read %s of %s@%s: %w", policy.PolicyPath, repo, sha, err)
	case file == nil || file.GetType() != "file":
		return app.RepoInfo{}, "", nil, app.Errorf(app.EInvalid, "%s in %s is not a file.", policy.PolicyPath, repo)
	}
	if err := policy.CheckPolicySize(policy.PolicyPath+" in "+repo, int64(file.GetSize())); err != nil {
		return app.RepoInfo{}, "", nil, err
	}
	data, err := file.GetContent()
	if err != nil {
		return app.RepoInfo{}, "", nil, fmt.Errorf("decode %s of %s@%s: %w", policy.PolicyPath, repo, sha, err)
	}
	raw, err := policy.ParsePolicy(fmt.Sprintf("%s@%.12s:%s", repo, sha, policy.PolicyPath), []byte(data))
	if err != nil {
		return app.RepoInfo{}, "", nil, err
	}
	return info, sha, raw, nil
}
