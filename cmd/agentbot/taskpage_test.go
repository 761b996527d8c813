package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// hostileSaid is what the model says at step 1: markup that would run in
// the reader's browser if the page did not escape it.
const hostileSaid = `Reading <img src=x onerror="document.title='pwned'"> stats.go`

// gatedModel is a model whose first answer after a tool result waits
// until release is called: the task stays at step 1, running, while the
// test looks at its page.
type gatedModel struct {
	URL     string
	release func()
}

func startGatedModel(t *testing.T, script llmtest.Script) gatedModel {
	t.Helper()
	model := llmtest.NewServer(t, script)
	target, err := url.Parse(strings.TrimSuffix(model.URL(), "/v1"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	gate := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	held := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		hold := !held && strings.Contains(string(body), `"role":"tool"`)
		held = held || hold
		mu.Unlock()
		if hold {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		proxy.ServeHTTP(w, r)
	}))
	release := func() { once.Do(func() { close(gate) }) }
	t.Cleanup(func() { release(); srv.Close() })
	return gatedModel{URL: srv.URL + "/v1", release: release}
}

// TestTaskPageFollowsARunningTaskInChromium opens, in headless Chromium,
// the page the status comment of a running fix links to, and watches it
// gain the fix's next step without being reloaded, then its verdict.
func TestTaskPageFollowsARunningTaskInChromium(t *testing.T) {
	t.Parallel()
	chromiumBin(t)
	model := startGatedModel(t, llmtest.Script{Steps: []llmtest.Step{
		{Text: hostileSaid, ToolCalls: []llmtest.Call{{Name: "read_file", Arguments: `{"path":"stats.go"}`}}},
		{Text: "Running the checks to see the failure.", ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: `{}`}}},
		{Text: "The loop starts at 1.", ToolCalls: []llmtest.Call{{Name: "edit_file",
			Arguments: `{"path":"stats.go","old_string":"for i := 1; i < len(xs); i++ {","new_string":"for i := 0; i < len(xs); i++ {"}`}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"title":"Fix Sum dropping the first sample","summary":"The loop starts at 0."}`}}},
	}})
	w := startWorld(t, worldOptions{files: map[string]string{policy.PolicyPath: quickPolicy}},
		map[string]string{"AGENTBOT_LLM_BASE_URL": model.URL})
	_, id, err := w.DeliverComment(t.Context(), demo.Requester, demo.Comment)
	if err != nil {
		t.Fatal(err)
	}

	// The link, from the status comment as GitHub shows it.
	link := regexp.MustCompile(`\[Follow this task\]\((http://[^)\s]+)\)`)
	var page string
	for deadline := time.Now().Add(e2eTimeout); page == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, c := range w.Sim.Comments(w.Repo, w.Issue) {
			if m := link.FindStringSubmatch(c.Body); m != nil && strings.Contains(c.Body, "agentbot:task="+id) {
				page = m[1]
			}
		}
	}
	if page == "" {
		t.Fatalf("no status comment of task %s links its page: %+v", id, w.Sim.Comments(w.Repo, w.Issue))
	}

	tab := startBrowser(t).open(t, page)
	text := tab.waitText(t, time.Minute, "Task "+id, "read_file", hostileSaid, "running")
	if strings.Contains(text, "run_checks") {
		t.Fatalf("the page shows step 2 before the model answered it:\n%s", text)
	}
	if n := tab.eval(t, `document.querySelectorAll("main img").length`); n != float64(0) {
		t.Errorf("the model's markup became %v elements on the page", n)
	}
	// A mark that a reload would wipe: the page must change in place.
	tab.eval(t, `window.stillOpen = true`)
	dir := t.ArtifactDir()
	tab.screenshot(t, filepath.Join(dir, "task-page-step1.png"))

	model.release()
	tab.waitText(t, 3*time.Minute, "run_checks", "Running the checks to see the failure.")
	if open := tab.eval(t, `window.stillOpen === true`); open != true {
		t.Error("the page was reloaded to show the new step; want it updated in place")
	}
	if rec := waitFinal(t, w, id); rec.State != app.StateSucceeded {
		t.Fatalf("task ended %s (%s)", rec.State, rec.Step)
	}
	text = tab.waitText(t, time.Minute, "succeeded", "pull request #2", "edit_file")
	if diff, _ := tab.eval(t, `document.querySelector("pre.diff").textContent`).(string); !strings.Contains(diff, "+\tfor i := 0; i < len(xs); i++ {") {
		t.Errorf("the page's diff:\n%s", diff)
	}
	tab.screenshot(t, filepath.Join(dir, "task-page-final.png"))
	if title := tab.eval(t, `document.title`); title == "pwned" {
		t.Error("the model's markup ran in the page")
	}
	for _, leak := range []string{w.Sim.App().WebhookSecret, "ghs_", "AGENTBOT_"} {
		if strings.Contains(text, leak) {
			t.Errorf("the page shows %q", leak)
		}
	}
	t.Logf("screenshots in %s", dir)
}

// TestPageFlagsRefuseWhatCannotSign: a public address without a secret, a
// short secret, both a file and the variable, or an address that is no
// URL, are refused before serve opens a port.
func TestPageFlagsRefuseWhatCannotSign(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 32)
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte(long+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags pageFlags
		env   string
		want  string // "" when accepted
	}{
		{"no pages", pageFlags{}, "", ""},
		{"secret and address", pageFlags{publicURL: "https://bot.example"}, long, ""},
		{"secret file", pageFlags{publicURL: "https://bot.example", secretFile: file}, "", ""},
		{"address without secret", pageFlags{publicURL: "https://bot.example"}, "", "set --task-page-secret-file"},
		{"short secret", pageFlags{}, "short", "at least 32"},
		{"file and variable", pageFlags{secretFile: file}, long, "not both"},
		{"not a URL", pageFlags{publicURL: "bot.example"}, long, "not an http or https address"},
	} {
		env, _, _ := testEnv(map[string]string{"AGENTBOT_TASK_PAGE_SECRET": c.env})
		_, err := c.flags.links(env, time.Hour)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	env, _, _ := testEnv(map[string]string{"AGENTBOT_PUBLIC_URL": "https://bot.example", "AGENTBOT_WEBHOOK_SECRET": "s"})
	if err := cmdServe(t.Context(), []string{"--redis-url", "redis://127.0.0.1:1/0", "--no-workers"}, env); err == nil || !strings.Contains(err.Error(), "--task-page-secret-file") {
		t.Errorf("serve with a public URL and no secret: %v", err)
	}
}
