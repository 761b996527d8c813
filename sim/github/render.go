package github

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// This file turns state into GitHub's JSON. Callers hold s.mu.

// nodeID is GitHub's legacy global id: base64 of "<len(type)>:<type><id>"
// with the length written in three digits, e.g. "012:IssueComment1".
func nodeID(typ string, id int64) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%03d:%s%d", len(typ), typ, id))
}

func (s *Server) userJSON(u *user) obj {
	api := s.api + "/users/" + url.PathEscape(u.login)
	html := s.base + "/" + u.login
	if u.typ == "Bot" {
		html = s.base + "/apps/" + strings.TrimSuffix(u.login, "[bot]")
	}
	return obj{
		"login": u.login, "id": u.id, "node_id": nodeID(u.typ, u.id),
		"avatar_url":          fmt.Sprintf("%s/avatars/u/%d?v=4", s.base, u.id),
		"gravatar_id":         "",
		"url":                 api,
		"html_url":            html,
		"followers_url":       api + "/followers",
		"following_url":       api + "/following{/other_user}",
		"gists_url":           api + "/gists{/gist_id}",
		"starred_url":         api + "/starred{/owner}{/repo}",
		"subscriptions_url":   api + "/subscriptions",
		"organizations_url":   api + "/orgs",
		"repos_url":           api + "/repos",
		"events_url":          api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
		"type":                u.typ,
		"user_view_type":      "public",
		"site_admin":          false,
	}
}

func (s *Server) loginJSON(login string) obj { return s.userJSON(s.userLocked(login, "")) }

func (r *repo) apiURL(s *Server) string  { return s.api + "/repos/" + r.fullName() }
func (r *repo) htmlURL(s *Server) string { return s.base + "/" + r.fullName() }

// repoJSON renders a repository; full adds what GET /repos/{owner}/{repo}
// returns beyond the short form embedded elsewhere.
func (s *Server) repoJSON(r *repo, full bool) obj {
	api, html := r.apiURL(s), r.htmlURL(s)
	host := strings.TrimPrefix(s.base, "http://")
	t := gitHubTime(r.created)
	m := obj{
		"id": r.id, "node_id": nodeID("Repository", r.id), "name": r.name, "full_name": r.fullName(),
		"owner": s.userJSON(r.owner), "private": true, "visibility": "private",
		"html_url": html, "description": nil, "fork": r.fork, "url": api,
		"archive_url":       api + "/{archive_format}{/ref}",
		"assignees_url":     api + "/assignees{/user}",
		"blobs_url":         api + "/git/blobs{/sha}",
		"branches_url":      api + "/branches{/branch}",
		"collaborators_url": api + "/collaborators{/collaborator}",
		"comments_url":      api + "/comments{/number}",
		"commits_url":       api + "/commits{/sha}",
		"compare_url":       api + "/compare/{base}...{head}",
		"contents_url":      api + "/contents/{+path}",
		"contributors_url":  api + "/contributors",
		"deployments_url":   api + "/deployments",
		"downloads_url":     api + "/downloads",
		"events_url":        api + "/events",
		"forks_url":         api + "/forks",
		"git_commits_url":   api + "/git/commits{/sha}",
		"git_refs_url":      api + "/git/refs{/sha}",
		"git_tags_url":      api + "/git/tags{/sha}",
		"git_url":           "git://" + host + "/" + r.fullName() + ".git",
		"issue_comment_url": api + "/issues/comments{/number}",
		"issue_events_url":  api + "/issues/events{/number}",
		"issues_url":        api + "/issues{/number}",
		"keys_url":          api + "/keys{/key_id}",
		"labels_url":        api + "/labels{/name}",
		"languages_url":     api + "/languages",
		"merges_url":        api + "/merges",
		"milestones_url":    api + "/milestones{/number}",
		"notifications_url": api + "/notifications{?since,all,participating}",
		"pulls_url":         api + "/pulls{/number}",
		"releases_url":      api + "/releases{/id}",
		"ssh_url":           "git@" + strings.Split(host, ":")[0] + ":" + r.fullName() + ".git",
		"stargazers_url":    api + "/stargazers",
		"statuses_url":      api + "/statuses/{sha}",
		"subscribers_url":   api + "/subscribers",
		"subscription_url":  api + "/subscription",
		"tags_url":          api + "/tags",
		"teams_url":         api + "/teams",
		"trees_url":         api + "/git/trees{/sha}",
		"clone_url":         html + ".git",
		"mirror_url":        nil,
		"hooks_url":         api + "/hooks",
		"svn_url":           html,
		"homepage":          nil,
		"language":          nil,
		"forks_count":       0, "forks": 0,
		"stargazers_count": 0, "watchers_count": 0, "watchers": 0,
		"size": 0, "default_branch": "main",
		"open_issues_count": r.openIssuesLocked(), "open_issues": r.openIssuesLocked(),
		"is_template": false, "topics": []string{},
		"has_issues": true, "has_projects": true, "has_wiki": false, "has_pages": false,
		"has_downloads": true, "has_discussions": false,
		"archived": false, "disabled": false,
		"pushed_at": t, "created_at": t, "updated_at": t,
		"allow_forking": true, "web_commit_signoff_required": false,
		"license": nil, "custom_properties": obj{},
	}
	if full {
		m["network_count"] = 0
		m["subscribers_count"] = 0
		m["temp_clone_token"] = "" // the "repository" schema, embedded in pull requests, has it non-null
		m["allow_squash_merge"] = true
		m["allow_merge_commit"] = true
		m["allow_rebase_merge"] = true
		m["allow_auto_merge"] = false
		m["delete_branch_on_merge"] = false
	}
	if r.owner.typ == "Organization" && full {
		m["organization"] = s.userJSON(r.owner)
	}
	return m
}

func (r *repo) openIssuesLocked() int {
	n := 0
	for _, is := range r.issues {
		if is.State == "open" {
			n++
		}
	}
	return n
}

// association is author_association: how the user relates to the repo.
func (s *Server) association(r *repo, login string) string {
	switch {
	case strings.EqualFold(login, r.owner.login):
		return "OWNER"
	case r.roles[strings.ToLower(login)] != "":
		return "COLLABORATOR"
	}
	return "NONE"
}

// viaApp is performed_via_github_app: the App for what its bot wrote.
func (s *Server) viaApp(login string) any {
	if login == s.app.BotLogin {
		return s.appJSON()
	}
	return nil
}

func (s *Server) appJSON() obj {
	t := gitHubTime(s.booted)
	return obj{
		"id": s.app.ID, "slug": s.app.Slug, "node_id": nodeID("Integration", s.app.ID),
		"client_id": s.app.ClientID, "owner": s.userJSON(s.userLocked(s.app.Owner, "")),
		"name": s.app.Name, "description": nullString(s.app.Description), "external_url": cmp.Or(s.app.ExternalURL, s.base),
		"html_url": s.base + "/apps/" + s.app.Slug, "created_at": t, "updated_at": t,
		"permissions": cloneMap(s.app.Permissions), "events": s.app.Events,
	}
}

func reactionRollup(apiURL string, rs []Reaction) obj {
	m := obj{"url": apiURL, "total_count": len(rs)}
	for _, c := range reactionContents() {
		m[c] = 0
	}
	for _, x := range rs {
		m[x.Content] = m[x.Content].(int) + 1
	}
	return m
}

// reactionContents are the emoji GitHub accepts as reactions.
func reactionContents() []string {
	return []string{"+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket"}
}

func (s *Server) reactionJSON(x Reaction) obj {
	return obj{
		"id": x.ID, "node_id": nodeID("Reaction", x.ID), "user": s.loginJSON(x.User),
		"content": x.Content, "created_at": gitHubTime(x.CreatedAt),
	}
}

// issueHTML is where an issue or pull request lives on the web.
func (s *Server) issueHTML(r *repo, is *Issue) string {
	kind := "issues"
	if is.Pull != nil {
		kind = "pull"
	}
	return fmt.Sprintf("%s/%s/%d", r.htmlURL(s), kind, is.Number)
}

func (s *Server) labelsJSON(r *repo, names []string) []obj {
	out := make([]obj, 0, len(names))
	for _, n := range names {
		id, ok := r.labelIDs[n]
		if !ok {
			id = s.newID()
			r.labelIDs[n] = id
		}
		out = append(out, obj{
			"id": id, "node_id": nodeID("Label", id), "url": r.apiURL(s) + "/labels/" + url.PathEscape(n),
			"name": n, "description": nil, "color": "ededed", "default": false,
		})
	}
	return out
}

func (s *Server) issueJSON(r *repo, is *Issue) obj {
	api := fmt.Sprintf("%s/issues/%d", r.apiURL(s), is.Number)
	comments := 0
	for _, c := range r.comments {
		if c.Issue == is.Number {
			comments++
		}
	}
	m := obj{
		"id": is.ID, "node_id": nodeID("Issue", is.ID), "url": api,
		"repository_url": r.apiURL(s), "labels_url": api + "/labels{/name}",
		"comments_url": api + "/comments", "events_url": api + "/events",
		"timeline_url": api + "/timeline", "html_url": s.issueHTML(r, is),
		"number": is.Number, "state": is.State, "state_reason": nil,
		"title": is.Title, "body": is.Body, "user": s.loginJSON(is.Author),
		"labels": s.labelsJSON(r, is.Labels), "assignee": nil, "assignees": []obj{},
		"milestone": nil, "locked": false, "active_lock_reason": nil,
		"comments": comments, "closed_at": nil, "closed_by": nil,
		"created_at": gitHubTime(is.CreatedAt), "updated_at": gitHubTime(is.UpdatedAt),
		"author_association":       s.association(r, is.Author),
		"performed_via_github_app": s.viaApp(is.Author),
		"reactions":                reactionRollup(api+"/reactions", is.Reactions),
		"draft":                    false,
	}
	if is.Pull != nil {
		pulls := fmt.Sprintf("%s/pulls/%d", r.apiURL(s), is.Number)
		html := s.issueHTML(r, is)
		m["pull_request"] = obj{"url": pulls, "html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch", "merged_at": nil}
		m["draft"] = is.Pull.Draft
	}
	return m
}

func (s *Server) commentJSON(r *repo, c *Comment) obj {
	is := r.issues[c.Issue-1]
	api := fmt.Sprintf("%s/issues/comments/%d", r.apiURL(s), c.ID)
	return obj{
		"id": c.ID, "node_id": nodeID("IssueComment", c.ID), "url": api,
		"html_url":  fmt.Sprintf("%s#issuecomment-%d", s.issueHTML(r, is), c.ID),
		"issue_url": fmt.Sprintf("%s/issues/%d", r.apiURL(s), c.Issue),
		"body":      c.Body, "user": s.loginJSON(c.Author),
		"created_at": gitHubTime(c.CreatedAt), "updated_at": gitHubTime(c.UpdatedAt),
		"author_association":       s.association(r, c.Author),
		"performed_via_github_app": s.viaApp(c.Author),
		"reactions":                reactionRollup(api+"/reactions", c.Reactions),
		"pin":                      nil,
		"minimized":                nil,
	}
}

// pullBranch is one side (head or base) of a pull request.
func (s *Server) pullBranch(rp *repo, ref, sha string) obj {
	return obj{
		"label": rp.owner.login + ":" + ref, "ref": ref, "sha": sha,
		"user": s.userJSON(rp.owner), "repo": s.repoJSON(rp, true),
	}
}

func link(href string) obj { return obj{"href": href} }

// pullView is what rendering a pull request needs from git, read before
// taking s.mu.
type pullView struct {
	headSHA, baseSHA                     string
	commits, additions, deletions, files int
}

// pullJSON renders a pull request; full is GET/POST's pull-request, the
// rest pulls/list's pull-request-simple.
func (s *Server) pullJSON(r *repo, is *Issue, v pullView, full bool) obj {
	p := is.Pull
	api := fmt.Sprintf("%s/pulls/%d", r.apiURL(s), is.Number)
	issueAPI := fmt.Sprintf("%s/issues/%d", r.apiURL(s), is.Number)
	html := s.issueHTML(r, is)
	headRepo := r
	if hr, err := s.repoLocked(p.HeadRepo); err == nil {
		headRepo = hr
	}
	reviewers := make([]obj, 0, len(p.Reviewers))
	for _, login := range p.Reviewers {
		reviewers = append(reviewers, s.loginJSON(login))
	}
	m := obj{
		"url": api, "id": p.ID, "node_id": nodeID("PullRequest", p.ID), "html_url": html,
		"diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": issueAPI,
		"commits_url": api + "/commits", "review_comments_url": api + "/comments",
		"review_comment_url": r.apiURL(s) + "/pulls/comments{/number}",
		"comments_url":       issueAPI + "/comments",
		"statuses_url":       r.apiURL(s) + "/statuses/" + v.headSHA,
		"number":             is.Number, "state": is.State, "locked": false,
		"title": is.Title, "user": s.loginJSON(is.Author), "body": is.Body,
		"labels": s.labelsJSON(r, is.Labels), "milestone": nil, "active_lock_reason": nil,
		"created_at": gitHubTime(is.CreatedAt), "updated_at": gitHubTime(is.UpdatedAt),
		"closed_at": nil, "merged_at": nil, "merge_commit_sha": nil,
		"assignee": nil, "assignees": []obj{}, "requested_reviewers": reviewers, "requested_teams": []obj{},
		"head": s.pullBranch(headRepo, p.Head, v.headSHA),
		"base": s.pullBranch(r, p.Base, v.baseSHA),
		"_links": obj{
			"self": link(api), "html": link(html), "issue": link(issueAPI),
			"comments": link(issueAPI + "/comments"), "review_comments": link(api + "/comments"),
			"review_comment": link(r.apiURL(s) + "/pulls/comments{/number}"),
			"commits":        link(api + "/commits"), "statuses": link(r.apiURL(s) + "/statuses/" + v.headSHA),
		},
		"author_association": s.association(r, is.Author), "auto_merge": nil, "draft": p.Draft,
	}
	if mg := p.Merged; mg != nil {
		m["closed_at"], m["merged_at"], m["merge_commit_sha"] = gitHubTime(mg.At), gitHubTime(mg.At), mg.Commit
	}
	if full {
		comments, reviewComments := 0, 0
		for _, c := range r.comments {
			if c.Issue == is.Number {
				comments++
			}
		}
		for _, c := range r.reviewCs {
			if c.Pull == is.Number {
				reviewComments++
			}
		}
		m["merged"] = false
		m["mergeable"] = true
		m["rebaseable"] = true
		m["mergeable_state"] = "clean"
		m["merged_by"] = nil
		if mg := p.Merged; mg != nil {
			m["merged"], m["mergeable"], m["rebaseable"], m["mergeable_state"] = true, nil, nil, "unknown"
			m["merged_by"] = s.loginJSON(mg.By)
		}
		m["comments"] = comments
		m["review_comments"] = reviewComments
		m["maintainer_can_modify"] = false
		m["commits"] = v.commits
		m["additions"] = v.additions
		m["deletions"] = v.deletions
		m["changed_files"] = v.files
	}
	return m
}

func (s *Server) reviewCommentJSON(r *repo, c *ReviewComment) obj {
	api := fmt.Sprintf("%s/pulls/comments/%d", r.apiURL(s), c.ID)
	pullAPI := fmt.Sprintf("%s/pulls/%d", r.apiURL(s), c.Pull)
	html := fmt.Sprintf("%s/pull/%d#discussion_r%d", r.htmlURL(s), c.Pull, c.ID)
	m := obj{
		"url": api, "id": c.ID, "node_id": nodeID("PullRequestReviewComment", c.ID),
		// The hunk is a stand-in: agentbot reads path and line, never the hunk.
		"pull_request_review_id": c.ReviewID, "diff_hunk": "@@ -1 +1 @@", "path": c.Path,
		"position": c.Line, "original_position": c.Line, "line": c.Line, "original_line": c.Line,
		"side": c.Side, "subject_type": "line", "start_line": nil, "original_start_line": nil, "start_side": nil,
		"commit_id": c.CommitID, "original_commit_id": c.CommitID,
		"user": s.loginJSON(c.Author), "body": c.Body,
		"created_at": gitHubTime(c.CreatedAt), "updated_at": gitHubTime(c.UpdatedAt),
		"html_url": html, "pull_request_url": pullAPI,
		"author_association": s.association(r, c.Author),
		"_links":             obj{"self": link(api), "html": link(html), "pull_request": link(pullAPI)},
		"reactions":          reactionRollup(api+"/reactions", c.Reactions),
	}
	if c.InReplyTo != 0 {
		m["in_reply_to_id"] = c.InReplyTo
	}
	return m
}

func (s *Server) reviewJSON(r *repo, v *Review) obj {
	pullAPI := fmt.Sprintf("%s/pulls/%d", r.apiURL(s), v.Pull)
	html := fmt.Sprintf("%s/pull/%d#pullrequestreview-%d", r.htmlURL(s), v.Pull, v.ID)
	return obj{
		"id": v.ID, "node_id": nodeID("PullRequestReview", v.ID), "user": s.loginJSON(v.Author),
		"body": v.Body, "state": v.State, "html_url": html, "pull_request_url": pullAPI,
		"_links":       obj{"html": link(html), "pull_request": link(pullAPI)},
		"submitted_at": gitHubTime(v.SubmittedAt), "commit_id": v.CommitID,
		"author_association": s.association(r, v.Author),
	}
}

// nullTime is a nullable timestamp.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return gitHubTime(t)
}

// nullString is a nullable string.
func nullString(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// checkRunJSON renders a check run; heads are the repository's branch
// heads, read before taking s.mu, to find the open pull requests whose
// head is the run's commit.
func (s *Server) checkRunJSON(r *repo, c *CheckRun, heads map[string]string) obj {
	api := fmt.Sprintf("%s/check-runs/%d", r.apiURL(s), c.ID)
	prs := []obj{}
	for _, is := range r.issues {
		if is.Pull == nil || is.State != "open" || is.Pull.HeadRepo != r.fullName() || heads[is.Pull.Head] != c.HeadSHA {
			continue
		}
		base := heads[is.Pull.Base]
		short := obj{"id": r.id, "url": r.apiURL(s), "name": r.name}
		prs = append(prs, obj{
			"id": is.Pull.ID, "number": is.Number, "url": fmt.Sprintf("%s/pulls/%d", r.apiURL(s), is.Number),
			"head": obj{"ref": is.Pull.Head, "sha": c.HeadSHA, "repo": short},
			"base": obj{"ref": is.Pull.Base, "sha": base, "repo": short},
		})
	}
	return obj{
		"id": c.ID, "node_id": nodeID("CheckRun", c.ID), "head_sha": c.HeadSHA, "name": c.Name,
		"external_id": c.ExternalID, "url": api, "html_url": fmt.Sprintf("%s/runs/%d", r.htmlURL(s), c.ID),
		"details_url": nullString(c.DetailsURL), "status": c.Status, "conclusion": nullString(c.Conclusion),
		"started_at": nullTime(c.StartedAt), "completed_at": nullTime(c.CompletedAt),
		"output": obj{
			"title": nullString(c.Title), "summary": nullString(c.Summary), "text": nullString(c.Text),
			"annotations_count": 0, "annotations_url": api + "/annotations",
		},
		// Each run gets its own suite: agentbot never reads suites.
		"check_suite": obj{"id": c.ID}, "app": s.appJSON(), "pull_requests": prs,
	}
}
