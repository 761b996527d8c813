package app

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A merged pull request, read back from GitHub, is what "agentbot eval
// capture" turns into an eval task: the tree it was merged onto, the issue
// it closed, and the tests it added or changed.

// MergedPull is what capture reads of a pull request.
type MergedPull struct {
	Number  int
	Title   string
	Body    string
	HTMLURL string
	Merged  bool
	// MergeCommit is GitHub's merge_commit_sha: the merge commit, the
	// squashed commit or the last rebased commit.
	MergeCommit string
	HeadSHA     string
	Commits     int // commits on the pull request's branch
}

// CommitInfo is one commit's message and parents, first parent first.
type CommitInfo struct {
	SHA     string
	Message string
	Parents []string
}

// RepoFile is one entry of a commit's tree. Type is "file", "symlink" or
// "submodule", as GitHub's contents API names them.
type RepoFile struct {
	Path string
	SHA  string // the blob's, or for a submodule its commit's
	Type string
	Size int
}

// closingRE matches GitHub's closing keywords followed by an issue
// reference: "Fixes #12", "closes: octo/api#3", "Resolved #4".
var closingRE = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+(?:([\w.-]+/[\w.-]+))?#(\d+)\b`)

// ClosingIssues returns the issues of repo (owner/name) that a pull
// request's body closes by GitHub's closing keywords, in order, each once.
// References to other repositories are left out: their text is not this
// repository's history.
func ClosingIssues(repo, body string) []int {
	var out []int
	for _, m := range closingRE.FindAllStringSubmatch(body, -1) {
		if m[1] != "" && !strings.EqualFold(m[1], repo) {
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil || n <= 0 || slices.Contains(out, n) {
			continue
		}
		out = append(out, n)
	}
	return out
}
