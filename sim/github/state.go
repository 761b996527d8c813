package github

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Issue is an issue or, when Pull is set, a pull request: GitHub numbers
// both from one sequence per repository and serves a pull request's
// comments, labels and reactions through the issues API.
type Issue struct {
	Repo      string // owner/name
	Number    int
	ID        int64
	Title     string
	Body      string
	Author    string
	State     string // open or closed
	Labels    []string
	Reactions []Reaction
	CreatedAt time.Time
	UpdatedAt time.Time
	Pull      *Pull
}

// Pull is what a pull request adds to its issue.
type Pull struct {
	ID int64
	// HeadRepo is the repository the head branch lives in: the base
	// repository itself, or a fork of it.
	HeadRepo  string
	Head      string
	Base      string
	Draft     bool
	Reviewers []string
	Merged    *PullMerge // set once merged (Merge)
}

// Comment is an issue (or pull request conversation) comment.
type Comment struct {
	ID        int64
	Repo      string
	Issue     int
	Author    string
	Body      string
	Edits     int // times PATCHed since creation
	Reactions []Reaction
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Reaction is one user's emoji on an issue or comment.
type Reaction struct {
	ID        int64
	User      string
	Content   string // +1, -1, laugh, confused, heart, hooray, rocket, eyes
	CreatedAt time.Time
}

// ReviewComment is a comment on a line of a pull request's diff.
type ReviewComment struct {
	ID        int64
	Repo      string
	Pull      int
	ReviewID  int64
	InReplyTo int64
	Author    string
	Body      string
	Path      string
	Line      int
	Side      string
	CommitID  string
	Reactions []Reaction
	CreatedAt time.Time
	UpdatedAt time.Time
	// ResolvedBy is who resolved the thread this comment begins, "" while
	// it is open (graphql.go).
	ResolvedBy string
}

// Review is a submitted pull request review.
type Review struct {
	ID          int64
	Repo        string
	Pull        int
	Author      string
	Body        string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, PENDING, DISMISSED
	CommitID    string
	SubmittedAt time.Time
}

// CheckRun is a check run and how often it was updated.
type CheckRun struct {
	ID          int64
	Repo        string
	Name        string
	HeadSHA     string
	Status      string
	Conclusion  string
	ExternalID  string
	DetailsURL  string
	Title       string
	Summary     string
	Text        string
	StartedAt   time.Time
	CompletedAt time.Time
	Updates     int
}

type user struct {
	id    int64
	login string
	typ   string // User, Bot or Organization
}

type installation struct {
	id      int64
	account *user
	created time.Time
}

type repo struct {
	id        int64
	owner     *user
	name      string
	install   int64
	dir       string // the bare repository
	fork      bool
	created   time.Time
	roles     map[string]string // login -> admin, maintain, write, triage, read
	issues    []*Issue          // by number-1
	comments  []*Comment
	reviews   []*Review
	reviewCs  []*ReviewComment
	labelIDs  map[string]int64
	checkRuns []*CheckRun
}

func (r *repo) fullName() string { return r.owner.login + "/" + r.name }

// userLocked returns the user with login, creating it on first sight as
// GitHub's users exist before we hear of them.
func (s *Server) userLocked(login, typ string) *user {
	if u, ok := s.users[strings.ToLower(login)]; ok {
		return u
	}
	if typ == "" {
		typ = "User"
		if strings.HasSuffix(login, "[bot]") {
			typ = "Bot"
		}
	}
	u := &user{id: s.newID(), login: login, typ: typ}
	s.users[strings.ToLower(login)] = u
	return u
}

// UserID is the numeric id GitHub gives login, as the simulator's
// payloads and answers show it; ok is false for a login it has not met.
func (s *Server) UserID(login string) (id int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[strings.ToLower(login)]
	if !ok {
		return 0, false
	}
	return u.id, true
}

// repoLocked finds a repository by "owner/name", case-insensitively as
// GitHub does.
func (s *Server) repoLocked(fullName string) (*repo, error) {
	r, ok := s.repos[strings.ToLower(fullName)]
	if !ok {
		return nil, fmt.Errorf("githubsim: no repository %q", fullName)
	}
	return r, nil
}

// lookupLocked finds issue or pull request number of repo.
func (s *Server) lookupLocked(repo string, number int) (*repo, *Issue, error) {
	r, err := s.repoLocked(repo)
	if err != nil {
		return nil, nil, err
	}
	is, err := r.issueLocked(number)
	if err != nil {
		return nil, nil, err
	}
	return r, is, nil
}

func (r *repo) issueLocked(number int) (*Issue, error) {
	if number < 1 || number > len(r.issues) {
		return nil, fmt.Errorf("githubsim: %s has no issue #%d", r.fullName(), number)
	}
	return r.issues[number-1], nil
}

// AddInstallation installs the App on an organization account and returns
// the installation id. Repositories join it through AddRepo.
func (s *Server) AddInstallation(account string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := &installation{id: s.newID(), account: s.userLocked(account, "Organization"), created: now()}
	s.installs[in.id] = in
	return in.id
}

// AddRepo creates fullName ("owner/name") in the installation as a real
// bare repository whose branch main holds one commit with files (path ->
// content).
func (s *Server) AddRepo(installationID int64, fullName string, files map[string]string) error {
	return s.addRepo(installationID, fullName, files, false)
}

// AddFork creates fullName as a fork: a repository outside every
// installation, holding files on main, from which pull requests can be
// opened against an installed repository (AddPullRequest's HeadRepo).
func (s *Server) AddFork(fullName string, files map[string]string) error {
	return s.addRepo(0, fullName, files, true)
}

func (s *Server) addRepo(installationID int64, fullName string, files map[string]string, fork bool) error {
	owner, name, ok := strings.Cut(fullName, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("githubsim: repository %q is not owner/name", fullName)
	}
	s.mu.Lock()
	if _, ok := s.installs[installationID]; !ok && !fork {
		s.mu.Unlock()
		return fmt.Errorf("githubsim: add %s: no installation %d", fullName, installationID)
	}
	if _, ok := s.repos[strings.ToLower(fullName)]; ok {
		s.mu.Unlock()
		return fmt.Errorf("githubsim: repository %s exists", fullName)
	}
	s.mu.Unlock()

	dir, err := s.initRepo(owner, name, files)
	if err != nil {
		return fmt.Errorf("githubsim: add %s: %w", fullName, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	r := &repo{
		id: s.newID(), name: name, install: installationID, dir: dir, fork: fork,
		created: now(), roles: map[string]string{}, labelIDs: map[string]int64{},
	}
	if in, ok := s.installs[installationID]; ok && strings.EqualFold(in.account.login, owner) {
		r.owner = in.account
	} else {
		r.owner = s.userLocked(owner, "")
	}
	s.repos[strings.ToLower(fullName)] = r
	return nil
}

// legacyPermission folds a repository role into the collaborator-
// permission API's legacy admin/write/read/none; ok is false for a role
// that does not exist.
func legacyPermission(role string) (legacy string, ok bool) {
	switch role {
	case "admin":
		return "admin", true
	case "maintain", "write":
		return "write", true
	case "triage", "read":
		return "read", true
	}
	return "none", false
}

// SetPermission gives login a role on repo: admin, maintain, write,
// triage or read; "none" or "" removes it.
func (s *Server) SetPermission(repo, login, role string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return err
	}
	s.userLocked(login, "")
	if role == "" || role == "none" {
		delete(r.roles, strings.ToLower(login))
		return nil
	}
	if _, ok := legacyPermission(role); !ok {
		return fmt.Errorf("githubsim: unknown role %q (want admin, maintain, write, triage, read or none)", role)
	}
	r.roles[strings.ToLower(login)] = role
	return nil
}

// AddIssue opens an issue by author and returns its number.
func (s *Server) AddIssue(repo, author, title, body string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return 0, err
	}
	return s.addIssueLocked(r, author, title, body, nil).Number, nil
}

func (s *Server) addIssueLocked(r *repo, author, title, body string, pull *Pull) *Issue {
	t := now()
	is := &Issue{
		Repo: r.fullName(), Number: len(r.issues) + 1, ID: s.newID(),
		Title: title, Body: body, Author: s.userLocked(author, "").login,
		State: "open", CreatedAt: t, UpdatedAt: t, Pull: pull,
	}
	r.issues = append(r.issues, is)
	return is
}

// PullOptions describe a pull request a user opens with AddPullRequest.
type PullOptions struct {
	Author, Title, Body string
	// Head is the branch with the changes; it must exist (push it first).
	Head string
	// Base defaults to main.
	Base string
	// HeadRepo is the fork holding Head (see AddFork); empty means the
	// repository itself.
	HeadRepo string
	Draft    bool
}

// AddPullRequest opens a pull request by a user and returns its number.
func (s *Server) AddPullRequest(repo string, o PullOptions) (int, error) {
	if o.Base == "" {
		o.Base = "main"
	}
	s.mu.Lock()
	r, err := s.repoLocked(repo)
	headRepo := r
	if err == nil && o.HeadRepo != "" {
		headRepo, err = s.repoLocked(o.HeadRepo)
	}
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if _, err := s.branchSHA(headRepo.dir, o.Head); err != nil {
		return 0, fmt.Errorf("githubsim: pull request head %s: %w", o.Head, err)
	}
	s.mu.Lock()
	pull := &Pull{ID: s.newID(), HeadRepo: headRepo.fullName(), Head: o.Head, Base: o.Base, Draft: o.Draft}
	n := s.addIssueLocked(r, o.Author, o.Title, o.Body, pull).Number
	s.mu.Unlock()
	return n, s.setPullRef(r, headRepo, o.Head, n)
}

// AddComment posts a comment on an issue or pull request as author and
// returns its id. DeliverIssueComment also sends the webhook.
func (s *Server) AddComment(repo string, issue int, author, body string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, _, err := s.lookupLocked(repo, issue)
	if err != nil {
		return 0, err
	}
	return s.addCommentLocked(r, issue, author, body).ID, nil
}

func (s *Server) addCommentLocked(r *repo, issue int, author, body string) *Comment {
	t := now()
	c := &Comment{ID: s.newID(), Repo: r.fullName(), Issue: issue, Author: s.userLocked(author, "").login, Body: body, CreatedAt: t, UpdatedAt: t}
	r.comments = append(r.comments, c)
	s.comments[c.ID] = c
	r.issues[issue-1].UpdatedAt = t
	return c
}

// Issue returns a copy of issue or pull request number in repo.
func (s *Server) Issue(repo string, number int) (Issue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, is, err := s.lookupLocked(repo, number)
	if err != nil {
		return Issue{}, err
	}
	return copyIssue(is), nil
}

// PullRequests returns copies of repo's pull requests, oldest first.
func (s *Server) PullRequests(repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return nil
	}
	var out []Issue
	for _, is := range r.issues {
		if is.Pull != nil {
			out = append(out, copyIssue(is))
		}
	}
	return out
}

// Comments returns copies of the comments on issue (or pull request)
// number of repo, oldest first.
func (s *Server) Comments(repo string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return nil
	}
	var out []Comment
	for _, c := range r.comments {
		if c.Issue == number {
			cc := *c
			cc.Reactions = slices.Clone(c.Reactions)
			out = append(out, cc)
		}
	}
	return out
}

// ReviewComments returns copies of the review comments on pull request
// number of repo, oldest first.
func (s *Server) ReviewComments(repo string, number int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return nil
	}
	var out []ReviewComment
	for _, c := range r.reviewCs {
		if c.Pull == number {
			cc := *c
			cc.Reactions = slices.Clone(c.Reactions)
			out = append(out, cc)
		}
	}
	return out
}

// Reviews returns copies of the reviews on pull request number of repo.
func (s *Server) Reviews(repo string, number int) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return nil
	}
	var out []Review
	for _, v := range r.reviews {
		if v.Pull == number {
			out = append(out, *v)
		}
	}
	return out
}

// CheckRuns returns copies of repo's check runs, oldest first.
func (s *Server) CheckRuns(repo string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.repoLocked(repo)
	if err != nil {
		return nil
	}
	out := make([]CheckRun, 0, len(r.checkRuns))
	for _, c := range r.checkRuns {
		out = append(out, *c)
	}
	return out
}

// BranchSHA reads the commit a branch of repo points at from the bare
// repository.
func (s *Server) BranchSHA(repo, branch string) (string, error) {
	s.mu.Lock()
	r, err := s.repoLocked(repo)
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	return s.branchSHA(r.dir, branch)
}

// Branches lists repo's branches with their head commits.
func (s *Server) Branches(repo string) (map[string]string, error) {
	s.mu.Lock()
	r, err := s.repoLocked(repo)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return s.branches(r.dir)
}

func copyIssue(is *Issue) Issue {
	c := *is
	c.Labels = slices.Clone(is.Labels)
	c.Reactions = slices.Clone(is.Reactions)
	if is.Pull != nil {
		p := *is.Pull
		p.Reviewers = slices.Clone(is.Pull.Reviewers)
		c.Pull = &p
	}
	return c
}

// sortedKeys returns m's keys in order, for stable answers.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
