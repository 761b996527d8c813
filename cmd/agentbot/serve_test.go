package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/internal/localnet"
	"github.com/agentbot/agentbot/internal/ostest"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
	"github.com/agentbot/agentbot/webhook/hookshot"
)

// testEnv is an Env whose environment is vars and whose output the test
// reads while the command runs.
func testEnv(vars map[string]string) (Env, *ostest.SyncBuffer, *ostest.SyncBuffer) {
	out, errOut := &ostest.SyncBuffer{}, &ostest.SyncBuffer{}
	return Env{Getenv: func(k string) string { return vars[k] }, Stdin: strings.NewReader(""), Stdout: out, Stderr: errOut}, out, errOut
}

// startServe runs "agentbot serve" in-process and waits for /healthz. The
// returned stop cancels it and returns what run returned.
func startServe(t testing.TB, vars map[string]string, args ...string) (base string, stop func() error, logs *ostest.SyncBuffer) {
	t.Helper()
	addr, err := localnet.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env, _, logs := testEnv(vars)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan struct{})
	var serveErr error
	go func() {
		defer close(served)
		// No admin pages unless the test asks: the default address is
		// one for the whole machine.
		serveArgs := []string{"serve", "--addr", addr, "--admin-addr", "off"}
		if vars["AGENTBOT_TASK_PAGE_SECRET"] != "" {
			// Live pages are linked on the intake's own address.
			serveArgs = append(serveArgs, "--public-url", "http://"+addr)
		}
		serveErr = run(ctx, append(serveArgs, args...), env)
	}()
	stop = func() error {
		cancel()
		<-served
		return serveErr
	}
	t.Cleanup(func() { _ = stop() })
	base = "http://" + addr
	if err := localnet.WaitHealthy(t.Context(), base+"/healthz", served); err != nil {
		t.Fatalf("%v (serve: %v)\n%s", err, serveErr, logs)
	}
	return base, stop, logs
}

func TestServeQueuesSignedWebhooksAndDrains(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	base, stop, logs := startServe(t, map[string]string{
		"AGENTBOT_WEBHOOK_SECRET": "old-secret, new-secret",
		"AGENTBOT_REDIS_URL":      rs.URL,
	}, "--no-workers")

	var payload []byte
	for _, secret := range []string{"old-secret", "new-secret"} {
		payload = hookshot.IssueComment("/agent fix the build")
		r, err := hookshot.Deliver(t.Context(), http.DefaultClient, base+"/webhook", []byte(secret), "issue_comment", "d-"+secret, payload)
		if err != nil || r.Status != http.StatusAccepted {
			t.Fatalf("delivery signed with %s: %d %v %v", secret, r.Status, r.Body, err)
		}
	}
	if r, _ := hookshot.Deliver(t.Context(), http.DefaultClient, base+"/webhook", []byte("other"), "issue_comment", "d-x", payload); r.Status != http.StatusUnauthorized {
		t.Errorf("delivery signed with an unknown secret: %d; want 401", r.Status)
	}
	if got := get(t, base+"/readyz"); !strings.Contains(got, `"ok":true`) {
		t.Errorf("/readyz = %s", got)
	}
	metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`agentbot_queue_depth{queue="default",state="pending"} 2`,
		`agentbot_webhook_requests_total{event="issue_comment",outcome="accepted"} 2`,
		`agentbot_webhook_ack_seconds_bucket`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A delivery whose body is still arriving when serve is told to stop
	// is answered before serve returns. The server answers "100 Continue"
	// once its handler reads the body: the delivery is then in flight,
	// its headers read, and nothing of it is buffered in a client.
	payload = hookshot.IssueComment("/agent fix the build")
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: agentbot\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Expect: 100-continue\r\nX-GitHub-Event: issue_comment\r\nX-GitHub-Delivery: in-flight\r\nX-Hub-Signature-256: %s\r\n\r\n",
		len(payload), webhook.Sign([]byte("new-secret"), payload))
	replies := bufio.NewReader(conn)
	if resp, err := http.ReadResponse(replies, nil); err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("in-flight delivery before the drain: %v, %v; want 100 Continue", resp, err)
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(replies, nil)
		if err != nil {
			t.Errorf("in-flight delivery: %v", err)
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()

	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	waitFor(t, func() bool { return strings.Contains(logs.String(), `"msg":"draining"`) })
	if _, err := conn.Write(payload); err != nil {
		t.Fatal(err)
	}
	if status := <-answered; status != http.StatusAccepted {
		t.Errorf("in-flight delivery during drain: %d; want 202", status)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve returned %v after draining", err)
	}
	if !strings.Contains(logs.String(), `"task":"`+webhook.TaskID("in-flight")+`"`) {
		t.Errorf("the JSON log lacks the task attribute:\n%s", logs)
	}
}

func TestServeServesTheAdminPages(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	seedTask(t, rs.URL)
	adminAddr, err := localnet.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, _, logs := startServe(t, map[string]string{
		"AGENTBOT_WEBHOOK_SECRET": "s", "AGENTBOT_REDIS_URL": rs.URL, "AGENTBOT_ADMIN_TOKEN": "s3cret",
	}, "--no-workers", "--admin-addr", adminAddr)
	admin := "http://" + adminAddr
	waitFor(t, func() bool { return strings.Contains(logs.String(), `"addr":"`+adminAddr+`"`) })
	code, body := fetch(t, admin+"/", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, "d-42") || !strings.Contains(body, "octo/hello") {
		t.Errorf("serve's admin task list: %d\n%s", code, body)
	}
	if code, _ := fetch(t, admin+"/", ""); code != http.StatusUnauthorized {
		t.Errorf("serve's admin pages without the token: %d; want 401", code)
	}
}

func TestServeRefusesAdminPagesOffLoopbackWithoutAToken(t *testing.T) {
	t.Parallel()
	env, _, _ := testEnv(map[string]string{"AGENTBOT_WEBHOOK_SECRET": "s", "AGENTBOT_REDIS_URL": "redis://127.0.0.1:1/0"})
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--no-workers", "--admin-addr", "0.0.0.0:0"}, env)
	if app.ErrorCode(err) != app.EInvalid || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("serve with admin pages on 0.0.0.0 and no token = %v; want refused", err)
	}
}

func TestServeRefusesToStartWithoutSecret(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		vars map[string]string
		args []string
		want string
	}{
		{"no secret", nil, nil, "no webhook secret"},
		{"blank secret", map[string]string{"AGENTBOT_WEBHOOK_SECRET": " , "}, nil, "no webhook secret"},
		{"file and environment", map[string]string{"AGENTBOT_WEBHOOK_SECRET": "x"}, []string{"--webhook-secret-file", file}, "not both"},
		{"missing file", nil, []string{"--webhook-secret-file", file + ".missing"}, "read webhook secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _, _ := testEnv(tt.vars)
			err := run(t.Context(), append([]string{"serve", "--addr", "127.0.0.1:0"}, tt.args...), env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("serve = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestWebhookSecrets(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("first\r\nsecond, third\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := webhookSecrets(file, "")
	if err != nil || len(got) != 3 || string(got[0]) != "first" || string(got[1]) != "second" || string(got[2]) != "third" {
		t.Errorf("webhookSecrets(file) = %q, %v; want first, second, third", got, err)
	}
	if got, err := webhookSecrets("", "only"); err != nil || len(got) != 1 || string(got[0]) != "only" {
		t.Errorf("webhookSecrets(env) = %q, %v", got, err)
	}
}

func get(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls cond for up to 10s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

func TestServeReadsTheWebhookSecretFromTheAppDir(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, appDirWebhookSecret), []byte("from-setup\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _, logs := startServe(t, map[string]string{"AGENTBOT_REDIS_URL": rs.URL}, "--no-workers", "--app-dir", dir)
	r, err := hookshot.Deliver(t.Context(), http.DefaultClient, base+"/webhook", []byte("from-setup"), "issue_comment",
		"d-1", hookshot.IssueComment("/agent fix"))
	if err != nil || r.Status != http.StatusAccepted {
		t.Errorf("delivery signed with the App dir's secret: %d %v %v\n%s", r.Status, r.Body, err, logs)
	}
}
