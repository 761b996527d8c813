package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/internal/localnet"
	"github.com/agentbot/agentbot/queue/redistest"
)

// helpArgs are every command and subcommand, as "--help" is given to them.
func helpArgs() [][]string {
	var out [][]string
	for name := range commands() {
		out = append(out, []string{name})
	}
	return append(out,
		[]string{"config", "validate"}, []string{"config", "schema"},
		[]string{"tasks", "list"}, []string{"tasks", "show"}, []string{"tasks", "trace"},
		[]string{"bench", "webhook"},
	)
}

func TestHelpPrintsOnStdoutAndSucceeds(t *testing.T) {
	t.Parallel()
	for _, args := range append(helpArgs(), []string{}) {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, args...), flag)
			env, out, errOut := testEnv(nil)
			err := run(t.Context(), args, env)
			if err != nil {
				t.Errorf("agentbot %s: %v (exit status %d); want 0", strings.Join(args, " "), err, exitCode(err))
			}
			if !strings.HasPrefix(out.String(), "usage:") {
				t.Errorf("agentbot %s printed %q on stdout; want its usage", strings.Join(args, " "), out.String())
			}
			if errOut.String() != "" {
				t.Errorf("agentbot %s printed on stderr: %q", strings.Join(args, " "), errOut.String())
			}
		}
	}
}

func TestHelpOfACommand(t *testing.T) {
	t.Parallel()
	env, out, _ := testEnv(nil)
	if err := run(t.Context(), []string{"help", "worker"}, env); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "usage: agentbot worker") || !strings.Contains(out.String(), "-metrics-addr") {
		t.Errorf("help worker printed:\n%s", out)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	env, out, _ := testEnv(nil)
	if err := run(t.Context(), []string{"help"}, env); err != nil {
		t.Fatal(err)
	}
	for name := range commands() {
		if !strings.Contains(out.String(), "\n  "+name+" ") {
			t.Errorf("help lacks %s:\n%s", name, out)
		}
	}
}

// TestUsageErrors: a command line agentbot cannot read exits with status 2
// and one line that says where the help is.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	cases := [][]string{{}, {"nope"}, {"config"}, {"config", "lint"}, {"tasks"}, {"tasks", "drop"}, {"bench"}, {"trace"}}
	for _, args := range helpArgs() {
		cases = append(cases, append(args, "--no-such-flag"))
	}
	for _, args := range cases {
		env, _, _ := testEnv(nil)
		err := run(t.Context(), args, env)
		if code := exitCode(err); err == nil || code != 2 {
			t.Errorf("agentbot %s: %v, exit status %d; want 2", strings.Join(args, " "), err, code)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !regexp.MustCompile(`\(see 'agentbot( [a-z-]+)* --help'\)$`).MatchString(msg) {
			t.Errorf("agentbot %s: %q; want one line ending with the help to see", strings.Join(args, " "), msg)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	env, out, _ := testEnv(nil)
	if err := run(t.Context(), []string{"version"}, env); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^agentbot \S+, commit (unknown|[0-9a-f]{40}( \(modified\))?), go1\.\S+ [a-z0-9]+/[a-z0-9]+\n$`)
	if !line.MatchString(out.String()) {
		t.Errorf("version printed %q", out.String())
	}
	env, out, _ = testEnv(nil)
	if err := run(t.Context(), []string{"version", "--json"}, env); err != nil {
		t.Fatal(err)
	}
	var v buildVersion
	if err := json.Unmarshal([]byte(out.String()), &v); err != nil || v.Version == "" || v.Go != runtime.Version() {
		t.Errorf("version --json = %s (%v); want the version and %s", out, err, runtime.Version())
	}
	if err := run(t.Context(), []string{"version", "extra"}, env); exitCode(err) != 2 {
		t.Errorf("version extra = %v; want a usage error", err)
	}
}

// writeTestKey writes a freshly made App private key and returns its path.
func writeTestKey(t *testing.T) string {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigCheckedBeforeListening: serve and worker refuse a bad
// configuration before they dial Redis (here: nothing answers there) or
// open a port (nothing is logged as listening).
func TestConfigCheckedBeforeListening(t *testing.T) {
	t.Parallel()
	key := writeTestKey(t)
	notPEM := filepath.Join(t.TempDir(), "key.txt")
	if err := os.WriteFile(notPEM, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	brokenServer := filepath.Join(t.TempDir(), "server.yaml")
	if err := os.WriteFile(brokenServer, []byte("max: {limits: {iterations: lots}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"AGENTBOT_WEBHOOK_SECRET": "s", "AGENTBOT_REDIS_URL": "redis://127.0.0.1:1/0"}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "no GitHub App id"},
		{[]string{"worker"}, "no GitHub App id"},
		{[]string{"serve", "--app-id", "1", "--private-key-file", notPEM}, "GitHub App private key: not a PEM file"},
		{[]string{"worker", "--app-id", "1", "--private-key-file", key, "--config", brokenServer}, `max.limits.iterations: "lots" is not a whole number`},
		{[]string{"worker", "--app-id", "1", "--private-key-file", key, "--concurrency", "0"}, "--concurrency 0"},
		{[]string{"worker", "--app-id", "1", "--private-key-file", key, "--orphan-sweep", "0s"}, "--orphan-sweep 0s: want a positive duration"},
		{[]string{"serve", "--app-id", "1", "--private-key-file", key, "--sandbox-executor", filepath.Join(t.TempDir(), "gone")}, "--sandbox-executor"},
		// Configured well, the next stop is Redis, named in one sentence.
		{[]string{"serve", "--app-id", "1", "--private-key-file", key}, "no answer from Redis at redis://127.0.0.1:1/0"},
		{[]string{"worker", "--app-id", "1", "--private-key-file", key}, "no answer from Redis at redis://127.0.0.1:1/0"},
	}
	for _, tt := range tests {
		env, _, logs := testEnv(vars)
		args := append(tt.args, "--metrics-addr", "off")
		if tt.args[0] == "serve" {
			args = append(tt.args, "--addr", "127.0.0.1:0", "--admin-addr", "off")
		}
		err := run(t.Context(), args, env)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("agentbot %s = %v; want %q", strings.Join(tt.args, " "), err, tt.want)
		}
		if strings.Contains(logs.String(), "listening") || strings.Contains(logs.String(), "redis: ") {
			t.Errorf("agentbot %s logged:\n%s", strings.Join(tt.args, " "), logs)
		}
	}
}

// TestWorkerServesHealthAndMetrics starts a worker on a real Redis and the
// Docker engine and reads its probes and metrics.
func TestWorkerServesHealthAndMetrics(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	addr, err := localnet.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	env, _, logs := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker", "--app-id", "1", "--private-key-file", writeTestKey(t),
			"--github-url", "http://127.0.0.1:1/api/v3", "--data-dir", t.TempDir(), "--metrics-addr", addr, "--skip-reach-probe"}, env)
	}()
	base := "http://" + addr
	if err := localnet.WaitHealthy(t.Context(), base+"/healthz", nil); err != nil {
		cancel()
		t.Fatalf("%v: %v\n%s", err, <-done, logs)
	}
	// Ready once its workers have started, with Redis up.
	if err := localnet.WaitHealthy(t.Context(), base+"/readyz", nil); err != nil {
		cancel()
		t.Fatalf("%v: %v\n%s", err, <-done, logs)
	}
	if got := get(t, base+"/readyz"); !strings.Contains(got, `"ok":true`) {
		t.Errorf("/readyz with Redis up = %s", got)
	}
	if got := get(t, base+"/metrics"); !strings.Contains(got, `agentbot_queue_depth{`) || !strings.Contains(got, "go_goroutines") {
		t.Errorf("/metrics lacks the queue depth or the Go runtime:\n%.500s", got)
	}
	rs.Stop()
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz with Redis stopped: %d; want 503", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("worker stopped with %v\n%s", err, logs)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	env, _, _ := testEnv(nil)
	if err := run(t.Context(), []string{"probe", srv.URL + "/healthz"}, env); err != nil {
		t.Errorf("probe of a healthy route: %v", err)
	}
	if err := run(t.Context(), []string{"probe", srv.URL + "/readyz"}, env); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("probe of a 503: %v; want the status named", err)
	}
	if err := run(t.Context(), []string{"probe", "http://127.0.0.1:1/healthz"}, env); err == nil || exitCode(err) != 1 {
		t.Errorf("probe of nothing: %v", err)
	}
}
