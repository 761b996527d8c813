package webhook

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentbot/agentbot/app"
)

var (
	// git revert writes "This reverts commit <sha>." in the message.
	revertsCommitRE = regexp.MustCompile(`(?i)\bThis reverts commit ([0-9a-f]{7,40})\b`)
	// A revert pull request's body names commits by sha and pull requests
	// as #N or owner/repo#N.
	shaRE   = regexp.MustCompile(`(?i)\b[0-9a-f]{7,40}\b`)
	prRefRE = regexp.MustCompile(`(?:\b([\w.-]+/[\w.-]+))?#(\d+)\b`)
)

// The fields of GitHub's push and pull_request deliveries that merges and
// reverts are read from, decoded here rather than through an API client's
// types, so that the intake links no GitHub client.
type (
	payloadRepo struct {
		FullName      string `json:"full_name"`
		DefaultBranch string `json:"default_branch"`
	}
	pushPayload struct {
		Ref     string      `json:"ref"`
		Repo    payloadRepo `json:"repository"`
		Commits []struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"commits"`
	}
	pullRequestPayload struct {
		Action      string      `json:"action"`
		Repo        payloadRepo `json:"repository"`
		PullRequest struct {
			Number         int    `json:"number"`
			Title          string `json:"title"`
			Body           string `json:"body"`
			Merged         bool   `json:"merged"`
			MergeCommitSHA string `json:"merge_commit_sha"`
			Base           struct {
				Ref string `json:"ref"`
			} `json:"base"`
		} `json:"pull_request"`
	}
)

// DetectReverts returns the reverts in a webhook delivery: the commits of a
// push to the repository's default branch whose message says "This reverts
// commit <sha>", or a pull request into the default branch, closed and
// merged, titled `Revert "…"`, with what its body names. Other events and
// actions have none. A payload that is not the event's JSON is an error.
func DetectReverts(event string, payload []byte) ([]app.Revert, error) {
	switch event {
	case "push":
		var p pushPayload
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, app.Errorf(app.EInvalid, "The push payload is not valid JSON: %v.", err)
		}
		if p.Ref != "refs/heads/"+p.Repo.DefaultBranch {
			return nil, nil
		}
		var reverts []app.Revert
		for _, c := range p.Commits {
			if shas := submatches(revertsCommitRE, c.Message); len(shas) > 0 {
				reverts = append(reverts, app.Revert{Repo: p.Repo.FullName, Commit: c.ID, Reverts: shas})
			}
		}
		return reverts, nil
	case "pull_request":
		var p pullRequestPayload
		if err := json.Unmarshal(payload, &p); err != nil {
			return nil, app.Errorf(app.EInvalid, "The pull_request payload is not valid JSON: %v.", err)
		}
		pr := p.PullRequest
		if p.Action != "closed" || !pr.Merged || pr.Base.Ref != p.Repo.DefaultBranch ||
			!strings.HasPrefix(pr.Title, `Revert "`) {
			return nil, nil
		}
		r := app.Revert{Repo: p.Repo.FullName, PR: pr.Number}
		body := pr.Body
		for _, sha := range shaRE.FindAllString(body, -1) {
			r.Reverts = append(r.Reverts, strings.ToLower(sha))
		}
		for _, m := range prRefRE.FindAllStringSubmatch(body, -1) {
			if m[1] == "" || strings.EqualFold(m[1], r.Repo) {
				n, _ := strconv.Atoi(m[2])
				r.RevertsPRs = append(r.RevertsPRs, n)
			}
		}
		if len(r.Reverts) == 0 && len(r.RevertsPRs) == 0 {
			return nil, nil
		}
		return []app.Revert{r}, nil
	}
	return nil, nil
}

// DetectMerge returns the merge in a webhook delivery: a pull_request
// closed with merged true. Other events and actions have none. A payload
// that is not the event's JSON, or a merge without its merge commit, is an
// error.
func DetectMerge(event string, payload []byte) (*app.Merge, error) {
	if event != "pull_request" {
		return nil, nil
	}
	var p pullRequestPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, app.Errorf(app.EInvalid, "The pull_request payload is not valid JSON: %v.", err)
	}
	pr := p.PullRequest
	if p.Action != "closed" || !pr.Merged {
		return nil, nil
	}
	if pr.Number <= 0 || !commitSHA.MatchString(pr.MergeCommitSHA) {
		return nil, app.Errorf(app.EInvalid, "The merged pull request has no number or no merge commit.")
	}
	return &app.Merge{PR: pr.Number, Commit: strings.ToLower(pr.MergeCommitSHA), Base: pr.Base.Ref}, nil
}

var commitSHA = regexp.MustCompile(`(?i)^[0-9a-f]{40}([0-9a-f]{24})?$`)

func submatches(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, strings.ToLower(m[1]))
	}
	return out
}
