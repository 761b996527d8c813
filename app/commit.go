package app

// The commits agentbot makes through GitHub's Git database API, so that
// GitHub signs them as the App's (app/github's Installation.CreateCommit).

// TreeChange is one path a commit changes.
type TreeChange struct {
	Path string
	// Mode is 100644, 100755 (executable) or 120000 (symbolic link, whose
	// Content is the target), or 160000 (submodule, whose Commit is the
	// submodule's commit).
	Mode    string
	Content []byte
	Commit  string
	Deleted bool // the path is removed; Mode is its mode before
}

// NewCommit is a commit to create on top of Parent.
type NewCommit struct {
	Parent  string
	Message string
	Changes []TreeChange
}

// GitCommit is a commit as the Git database shows it.
type GitCommit struct {
	SHA      string
	Tree     string
	Parents  []string
	Message  string
	Author   string // "Name <email>"
	Verified bool   // GitHub verified its signature
	Reason   string // why Verified is what it is: "valid", "unsigned", ...
}
