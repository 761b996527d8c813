package runner

import (
	"context"
	"errors"
	"log/slog"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/runner/workspace"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// pushWorld is the simulator with acme/push, agentbot's App against it
// and a workspace manager: what the push needs, without a sandbox.
type pushWorld struct {
	sim    *githubsim.Server
	inst   int64
	gh     *github.App
	remote workspace.Remote
	wsm    *workspace.Manager
}

const pushRepo = "acme/push"

func newPushWorld(t *testing.T) *pushWorld {
	t.Helper()
	sim, err := githubsim.New(githubsim.Options{Dir: t.TempDir(), AppKey: githubsim.SharedKey()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	w := &pushWorld{sim: sim, inst: sim.AddInstallation("acme"), wsm: workspace.NewManager(t.TempDir(), workspace.Options{})}
	if err := sim.AddRepo(w.inst, pushRepo, map[string]string{"README.md": "# push\n", "old.txt": "old\n", "run.sh": "echo hi\n"}); err != nil {
		t.Fatal(err)
	}
	if w.gh, err = github.NewApp(github.Config{AppID: sim.App().ID, PrivateKey: sim.App().PrivateKeyPEM, APIURL: sim.APIURL()}); err != nil {
		t.Fatal(err)
	}
	inst, err := w.gh.Installation(w.inst, pushRepo)
	if err != nil {
		t.Fatal(err)
	}
	info, err := inst.Repository(t.Context(), pushRepo)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := w.gh.Token(t.Context(), w.inst, pushRepo, app.TokenPermissions{Contents: "write"})
	if err != nil {
		t.Fatal(err)
	}
	w.remote = workspace.Remote{URL: info.CloneURL, Token: tok.Value}
	return w
}

// commit checks base out, lets edit change the tree, gates and commits it
// as the runner does, with ada as co-author.
func (w *pushWorld) commit(t *testing.T, base string, edit func(r *workspaceRoot)) *workspace.Workspace {
	t.Helper()
	ws, err := w.wsm.Checkout(t.Context(), workspace.CheckoutOptions{Repo: pushRepo, Remote: w.remote, Base: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	edit(&workspaceRoot{t: t, ws: ws})
	if _, err := ws.Gate(t.Context(), policy.Policy{Paths: policy.Paths{Allow: []string{"**"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Commit(t.Context(), workspace.CommitOptions{Message: "Fix the thing\n", Author: workspace.Signature{Name: "agentbot[bot]", Email: "bot@example.com"},
		CoAuthors: []workspace.Signature{coAuthor("ada", 583231)}}); err != nil {
		t.Fatal(err)
	}
	return ws
}

// workspaceRoot edits a work tree through its os.Root.
type workspaceRoot struct {
	t  *testing.T
	ws *workspace.Workspace
}

func (r *workspaceRoot) must(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

func (w *pushWorld) git(t *testing.T, args ...string) string {
	t.Helper()
	dir, err := w.sim.GitDir(pushRepo)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (w *pushWorld) committer(t *testing.T) *github.Installation {
	t.Helper()
	inst, err := w.gh.Committer(w.inst, pushRepo)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// committerOnly is the App as the runner's GitHub for a push, which asks
// it for nothing but its Committer; runner/githubapp, which adapts it all,
// imports the runner.
type committerOnly struct{ app *github.App }

func (c committerOnly) Installation(int64, string) (Installation, error) {
	return nil, errors.New("a push asks for no installation")
}

func (c committerOnly) Token(context.Context, int64, string, app.TokenPermissions) (app.RepoToken, error) {
	return app.RepoToken{}, errors.New("a push mints no token")
}

func (c committerOnly) Committer(id int64, repo string) (Committer, error) {
	return c.app.Committer(id, repo)
}

// treeAndParent are the tree and parent of ws's commit.
func treeAndParent(t *testing.T, ws *workspace.Workspace) (string, string) {
	t.Helper()
	ch, err := ws.Change(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return ch.Tree, ch.Parent
}

func TestSignedPushIsTheGatedTreeOnItsParent(t *testing.T) {
	t.Parallel()
	w := newPushWorld(t)
	ctx := t.Context()
	main := w.git(t, "rev-parse", "main")
	ws := w.commit(t, "main", func(r *workspaceRoot) {
		root := r.ws.Root()
		r.must(root.Remove("old.txt"))
		r.must(root.Chmod("run.sh", 0o755))
		r.must(root.MkdirAll("pkg/fresh", 0o755))
		r.must(root.WriteFile("pkg/fresh/new.go", []byte("package fresh\n"), 0o644))
		r.must(root.WriteFile("data.bin", []byte{0, 1, 0xfe, 0xff}, 0o644))
		r.must(root.Symlink("README.md", "readme-link"))
	})
	tree, parent := treeAndParent(t, ws)
	if parent != main {
		t.Fatalf("local commit on %s, want main %s", parent, main)
	}
	inst := w.committer(t)
	sha, err := pushThroughAPI(ctx, inst, ws, pushRepo, "agent/1-fix", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := w.git(t, "rev-parse", "agent/1-fix"); got != sha {
		t.Errorf("branch at %s, want the pushed %s", got, sha)
	}
	if got := w.git(t, "rev-parse", sha+"^{tree}"); got != tree {
		t.Errorf("remote tree %s, want the gated %s", got, tree)
	}
	if got := w.git(t, "rev-parse", sha+"^"); got != main {
		t.Errorf("parent %s, want %s", got, main)
	}
	ls := w.git(t, "ls-tree", "-r", sha)
	for _, want := range []string{"100755 blob", "\trun.sh", "\tpkg/fresh/new.go", "120000 blob", "\treadme-link", "\tdata.bin"} {
		if !strings.Contains(ls, want) {
			t.Errorf("remote tree lacks %q:\n%s", want, ls)
		}
	}
	if strings.Contains(ls, "old.txt") {
		t.Errorf("deleted file is still in the remote tree:\n%s", ls)
	}
	msg := w.git(t, "log", "-1", "--format=%B", sha)
	if !strings.Contains(msg, "Co-authored-by: ada <583231+ada@users.noreply.github.com>") {
		t.Errorf("message lacks the requester's trailer:\n%s", msg)
	}
	c, err := inst.GetCommit(ctx, pushRepo, sha)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Verified || c.Reason != "valid" || !strings.Contains(c.Author, w.sim.App().BotLogin) {
		t.Errorf("commit %+v: want the App's, verified", c)
	}
	w.git(t, "fsck", "--no-dangling")

	// Run again after a crash before the pushed commit was saved: the
	// branch is found done, and nothing new is made.
	again, err := pushThroughAPI(ctx, inst, ws, pushRepo, "agent/1-fix", "")
	if err != nil || again != sha {
		t.Errorf("repeated push = %s, %v; want %s", again, err, sha)
	}

	// A follow-up on the pull request's branch appends one commit.
	next := w.commit(t, sha, func(r *workspaceRoot) {
		r.must(r.ws.Root().WriteFile("pkg/fresh/new.go", []byte("package fresh\n\nconst X = 1\n"), 0o644))
	})
	followup, err := pushThroughAPI(ctx, inst, next, pushRepo, "agent/1-fix", sha)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.git(t, "rev-list", "--count", main+"..agent/1-fix"); got != "2" {
		t.Errorf("%s commits on the branch after the follow-up, want 2", got)
	}
	if got := w.git(t, "rev-parse", followup+"^"); got != sha {
		t.Errorf("follow-up on %s, want %s", got, sha)
	}
}

func TestSignedPushRefusesABranchThatMoved(t *testing.T) {
	t.Parallel()
	w := newPushWorld(t)
	ctx := t.Context()
	first := w.commit(t, "main", func(r *workspaceRoot) {
		r.must(r.ws.Root().WriteFile("a.txt", []byte("a\n"), 0o644))
	})
	inst := w.committer(t)
	sha, err := pushThroughAPI(ctx, inst, first, pushRepo, "agent/2-x", "")
	if err != nil {
		t.Fatal(err)
	}
	// The follow-up starts from sha; someone pushes to the branch meanwhile.
	ws := w.commit(t, sha, func(r *workspaceRoot) {
		r.must(r.ws.Root().WriteFile("a.txt", []byte("agent\n"), 0o644))
	})
	theirs, err := w.sim.Commit(pushRepo, "agent/2-x", "grace", "grace's fix", map[string]string{"b.txt": "b\n"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = pushThroughAPI(ctx, inst, ws, pushRepo, "agent/2-x", sha)
	if e, ok := errors.AsType[*app.Error](err); !ok || e.Code != app.EConflict || !strings.Contains(e.Message, "not overwritten") {
		t.Fatalf("push over a moved branch: %v, want a conflict saying nothing was overwritten", err)
	}
	if got := w.git(t, "rev-parse", "agent/2-x"); got != theirs {
		t.Errorf("branch at %s, want their commit %s kept", got, theirs)
	}

	// The same race inside GitHub, after our read of the branch: the
	// ref update is refused, not forced.
	ws2 := w.commit(t, theirs, func(r *workspaceRoot) {
		r.must(r.ws.Root().WriteFile("c.txt", []byte("c\n"), 0o644))
	})
	ch, err := ws2.Change(ctx)
	if err != nil {
		t.Fatal(err)
	}
	made, err := inst.CreateCommit(ctx, pushRepo, app.NewCommit{Parent: ch.Parent, Message: ch.Message})
	if err != nil {
		t.Fatal(err)
	}
	later, err := w.sim.Commit(pushRepo, "agent/2-x", "grace", "again", map[string]string{"d.txt": "d\n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.MoveBranch(ctx, pushRepo, "agent/2-x", theirs, made.SHA); app.ErrorCode(err) != app.EConflict {
		t.Errorf("move after a concurrent push: %v, want a conflict", err)
	}
	if got := w.git(t, "rev-parse", "agent/2-x"); got != later {
		t.Errorf("branch at %s, want %s kept", got, later)
	}
}

func TestUnsignedPushGoesOverGit(t *testing.T) {
	t.Parallel()
	w := newPushWorld(t)
	ws := w.commit(t, "main", func(r *workspaceRoot) {
		r.must(r.ws.Root().WriteFile("a.txt", []byte("a\n"), 0o644))
	})
	r := &Runner{cfg: Config{GitHub: committerOnly{w.gh}}}
	p := policy.Policy{PullRequest: app.PullRequestSpec{SignedCommits: false}}
	tk := &task{Task: &app.Task{Repo: pushRepo, InstallationID: w.inst}, policy: policy.LoadedPolicy{Policy: p}, prog: progress{Branch: "agent/3-y"}}
	sha, err := r.push(t.Context(), tk, ws, w.remote, "")
	if err != nil {
		t.Fatal(err)
	}
	if sha != ws.Head() || w.git(t, "rev-parse", "agent/3-y") != sha {
		t.Errorf("pushed %s, want the local commit %s on the branch", sha, ws.Head())
	}
	if ok, reason, err := w.sim.CommitVerification(pushRepo, sha); err != nil || ok || reason != "unsigned" {
		t.Errorf("a commit pushed over git shows as %v %q %v, want unsigned", ok, reason, err)
	}

	// With the default policy the same runner goes through the API.
	tk.policy.Policy.PullRequest.SignedCommits = true
	tk.prog.Branch = "agent/4-z"
	signed, err := r.push(t.Context(), tk, ws, w.remote, "")
	if err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := w.sim.CommitVerification(pushRepo, signed); !ok || signed == ws.Head() {
		t.Errorf("default push made %s (local %s), want a verified commit made by GitHub", signed, ws.Head())
	}
}

func TestCommitsCreditAPersonNeverAnApp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := redisStore(t)
	r := &Runner{cfg: Config{Pulls: store, Bot: workspace.Signature{Name: "agentbot[bot]", Email: "bot@example.com"}}}
	taskOf := func(requester string, id int64, ci bool) *task {
		tk := ciTask(requester, id)
		if !ci {
			tk.CI = nil
		}
		return tk
	}
	credited := func(tk *task) string {
		t.Helper()
		sigs, err := r.coAuthors(ctx, tk)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, s := range sigs {
			out = append(out, s.Name+" <"+s.Email+">")
		}
		return strings.Join(out, ", ")
	}
	keep := func(owner app.RecordOwner) {
		t.Helper()
		if err := store.SavePull(ctx, app.AgentPull{Owner: owner, Repo: "octo/hello", Number: 2, Task: "t1", Requester: "ada", RequesterID: 583231}); err != nil {
			t.Fatal(err)
		}
	}
	// The App pushed the failing head: the event's sender is its bot.
	fromCI := taskOf("agentbot[bot]", 0, true)
	if got := credited(fromCI); got != "" {
		t.Errorf("a CI follow-up on a pull request with no record credits %q; want nobody", got)
	}
	for _, other := range []app.RecordOwner{
		{},                              // kept before records had owners
		{InstallationID: 7, RepoID: 71}, // a repository of the same name, made again
		{InstallationID: 8, RepoID: 70}, // the repository, moved to another installation
	} {
		keep(other)
		if got := credited(fromCI); got != "" {
			t.Errorf("a CI follow-up credits %q from a record of %+v; want nobody", got, other)
		}
	}
	keep(app.RecordOwner{InstallationID: 7, RepoID: 70})
	if got, want := credited(fromCI), "ada <583231+ada@users.noreply.github.com>"; got != want {
		t.Errorf("a CI follow-up credits %q; want %q", got, want)
	}
	for requester, want := range map[string]string{"grace": "grace <5+grace@users.noreply.github.com>", "agentbot[bot]": "", "renovate[bot]": ""} {
		if got := credited(taskOf(requester, 5, false)); got != want {
			t.Errorf("a command of %s credits %q; want %q", requester, got, want)
		}
	}
}

// redisStore is the queue's store over a Redis of the test's own.
func redisStore(t *testing.T) *queue.Store {
	t.Helper()
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return queue.NewStore(rdb)
}

// ciTask is a follow-up that failing CI started on octo/hello#2
// (installation 7, repository 70), its event sent by requester.
func ciTask(requester string, id int64) *task {
	return &task{Task: &app.Task{ID: "t2", Repo: "octo/hello", Number: 2, InstallationID: 7, Requester: requester, RequesterID: id,
		CI: &app.CIEvent{Kind: "workflow_run", HeadSHA: "abc"}},
		policy: policy.LoadedPolicy{Repo: app.RepoInfo{ID: 70}}, log: slog.New(slog.DiscardHandler)}
}
