package main

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/localnet"
	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
)

// startAdmin runs "agentbot admin" in-process until the test ends and
// returns its base URL once it answers.
func startAdmin(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	addr, err := localnet.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	env, _, logs := testEnv(vars)
	done := make(chan error, 1)
	go func() { done <- cmdAdmin(ctx, append(args, "--admin-addr", addr), env) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("admin: %v\n%s", err, logs.String())
		}
	})
	base := "http://" + addr
	for range 100 {
		if resp, err := http.Get(base + "/"); err == nil {
			resp.Body.Close()
			return base
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("admin did not answer on %s\n%s", addr, logs.String())
	return ""
}

func fetch(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// seedTask queues a real task and appends a trace to it.
func seedTask(t *testing.T, url string) {
	t.Helper()
	rdb, err := queue.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	task := app.Task{ID: "d-42", Delivery: "d-42", Event: "issue_comment", InstallationID: 1, Repo: "octo/hello", Number: 7,
		Verb: app.VerbFix, Requester: "alice", ReceivedAt: time.Now().UTC()}
	if _, err := queue.NewClient(rdb).Enqueue(t.Context(), task); err != nil {
		t.Fatal(err)
	}
	if err := queue.NewStore(rdb).SetState(t.Context(), task.ID, app.StateSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	tr := queue.NewTraces(rdb, time.Hour)
	for _, e := range []app.TraceEvent{
		{Kind: app.TracePhase, Name: "workspace", Duration: 800 * time.Millisecond, Outcome: "ok"},
		{Kind: app.TraceModelCall, Step: 1, Name: "plugsky-coder", Duration: 2 * time.Second, PromptTokens: 1800, CompletionTokens: 120, Cost: 0.0042, Outcome: "ok"},
		{Kind: app.TraceToolCall, Step: 1, Name: "patch", Args: `{"path":"stats.go"}`, Result: "patched stats.go", Outcome: "ok"},
		{Kind: app.TraceRefusal, Step: 2, Name: "patch", Outcome: "refused", Detail: ".github/workflows/ci.yml is not an allowed path"},
		{Kind: app.TraceCheck, Step: 3, Name: "test", Duration: 3 * time.Second, Outcome: "passed", Detail: "go test ./..."},
	} {
		if err := tr.Append(t.Context(), task.ID, e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestAdminRefusesWithoutTheToken(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	seedTask(t, rs.URL)
	base := startAdmin(t, map[string]string{"AGENTBOT_REDIS_URL": rs.URL, "AGENTBOT_ADMIN_TOKEN": "s3cret"})
	for _, path := range []string{"/", "/tasks/d-42", "/tasks/d-42/trace.jsonl"} {
		if code, body := fetch(t, base+path, ""); code != http.StatusUnauthorized || strings.Contains(body, "octo/hello") {
			t.Errorf("GET %s without the token: %d %q", path, code, body)
		}
		if code, _ := fetch(t, base+path, "wrong"); code != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d", path, code)
		}
	}
	code, body := fetch(t, base+"/tasks/d-42", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, "plugsky-coder") || !strings.Contains(body, "not an allowed path") {
		t.Errorf("GET /tasks/d-42 with the token: %d\n%s", code, body)
	}

	env, _, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
	if err := cmdAdmin(t.Context(), []string{"--admin-addr", "0.0.0.0:0"}, env); app.ErrorCode(err) != app.EInvalid {
		t.Errorf("admin on 0.0.0.0 without a token: %v, want refused", err)
	}
}

// TestAdminRefusesARebindingHost serves the pages without a token, as on
// loopback by default, and asks for them under a name an attacker's DNS
// points at 127.0.0.1: refused with 421, nothing shown.
func TestAdminRefusesARebindingHost(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	seedTask(t, rs.URL)
	base := startAdmin(t, map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
	for host, want := range map[string]int{"rebind.example": http.StatusMisdirectedRequest, strings.TrimPrefix(base, "http://"): http.StatusOK} {
		req, err := http.NewRequest(http.MethodGet, base+"/tasks/d-42", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want != http.StatusOK) == strings.Contains(string(body), "octo/hello") {
			t.Errorf("Host %s: %d; want %d, and the task shown only when served", host, resp.StatusCode, want)
		}
	}
}

// TestAdminTraceInChromium renders a real task's trace page in headless
// Chromium: the DOM the browser built, and a screenshot that is a page,
// not a blank.
func TestAdminTraceInChromium(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed; CI requires it (apt-get install -y chromium)")
		}
		t.Skip("chromium is not installed (apt-get install -y chromium)")
	}
	rs := redistest.Start(t)
	seedTask(t, rs.URL)
	base := startAdmin(t, map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
	dir := t.TempDir()
	chromium := func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--window-size=1280,800"}, args...)
		out, err := exec.CommandContext(ctx, bin, append(args, base+"/tasks/d-42")...).Output()
		if err != nil {
			t.Fatalf("chromium %v: %v", args, err)
		}
		return out
	}

	dom := string(chromium("--dump-dom"))
	for _, want := range []string{"Task d-42", "octo/hello#7", "alice", "succeeded", "plugsky-coder", "1800 tokens in, 120 out, $0.0042",
		"1 passed, 0 failed", ".github/workflows/ci.yml is not an allowed path", `href="/tasks/d-42/trace.jsonl"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page Chromium rendered lacks %q:\n%s", want, dom)
		}
	}

	shot := filepath.Join(dir, "trace.png")
	chromium("--screenshot=" + shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
		t.Errorf("screenshot is %v, want 1280x800", b)
	}
	if dark := darkPixels(img); dark < 2000 {
		t.Errorf("screenshot has %d dark pixels: no text was drawn", dark)
	}
}

// darkPixels counts the pixels dark enough to be text.
func darkPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if g := color.GrayModel.Convert(img.At(x, y)).(color.Gray); g.Y < 100 {
				n++
			}
		}
	}
	return n
}
