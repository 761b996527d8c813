package runner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
	"github.com/agentbot/agentbot/runner/sandbox/sandboxtest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

// A fork's head is hostile: the setup that runs over its tree has no
// network, though the policy gives setup network and the host is allowed,
// and the finding's test, which tries to reach the same host, reaches
// nothing: failing on both commits, it proves nothing.
func TestReviewOfAForkHeadReachesNoNetwork(t *testing.T) {
	t.Parallel()
	gw := sandboxtest.BridgeGateway(t)
	server := sandboxtest.StartGitServer(t)
	addr := gw + ":" + server.Port
	// The check runs the shell tests under tests/, which need no build:
	// a test file by convention, and TAP output naming what failed.
	policy := fmt.Sprintf(`version: 1
checks:
  - {name: test, run: "for t in tests/*.sh; do bash \"$t\" || exit 1; done"}
trigger: {allow_forks: true}
setup:
  network: true
  run: ["git ls-remote http://%s/deps.git || echo setup reached nothing"]
`, addr)
	host, port, _ := strings.Cut(addr, ":")
	reach := "if exec 3<>/dev/tcp/" + host + "/" + port + "; then echo 'ok 1 - reaches out'; else echo 'not ok 1 - no network: nothing reached'; exit 1; fi\n"
	w := newDockerWorldWith(t, policy, llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{finding(t, "high", "stats.go", meanLine, "Mean must be checked against the network", "tests/reach.sh", reach)}},
		{ToolCalls: []llmtest.Call{finishReview("Checked.")}},
	}}, func(c *runner.Config) {
		c.Server.SetupNetwork = true
		allowHost(t, c, addr)
	})
	rec := w.recorded(t)
	if err := w.sim.AddFork("mallory/stats", map[string]string{"stats.go": buggyStats}); err != nil {
		t.Fatal(err)
	}
	pr, err := w.sim.AddPullRequest(repo, githubsim.PullOptions{Author: "mallory", Title: "Simplify Mean", Head: "main", HeadRepo: "mallory/stats"})
	if err != nil {
		t.Fatal(err)
	}
	runReview(t, w, w.reviewTask(t, "V1", pr))

	if n := server.Requests.Load(); n != 0 {
		t.Errorf("the fork's setup or test reached the host: %d requests", n)
	}
	comments := w.sim.ReviewComments(repo, pr)
	if len(comments) != 1 {
		t.Fatalf("%d inline comments; want 1", len(comments))
	}
	body := comments[0].Body
	if strings.Contains(body, "✅ proven") || !strings.Contains(body, "♻️ pre-existing") || !strings.Contains(body, "no network:") {
		t.Errorf("the finding whose test needs the network is not shown failing without it on both commits:\n%s", body)
	}
	if o := rec.outcomes["V1"]; o.Review == nil || o.Review.Proven != 0 {
		t.Errorf("outcome %+v; want nothing proven", o.Review)
	}
	var proofs []string
	for _, e := range rec.trace("V1", app.TraceCheck) {
		proofs = append(proofs, e.Name+" "+e.Outcome)
	}
	if fmt.Sprint(proofs) != "[proof head test failed proof base test failed]" {
		t.Errorf("proofs in the trace %q", proofs)
	}
}
