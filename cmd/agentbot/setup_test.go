package main

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/github"
	"github.com/agentbot/agentbot/internal/ostest"
	githubsim "github.com/agentbot/agentbot/sim/github"
)

var (
	openLine   = regexp.MustCompile(`Open (http://\S+)/ in a browser`)
	formAction = regexp.MustCompile(`<form id="manifest" method="post" action="([^"]+)">`)
	formValue  = regexp.MustCompile(`name="manifest" value="([^"]+)"`)
)

// TestSetupRegistersTheAppEndToEnd plays the user's browser through the
// manifest flow against the simulator, then uses what setup wrote.
func TestSetupRegistersTheAppEndToEnd(t *testing.T) {
	t.Parallel()
	sim, err := githubsim.New(githubsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	out := filepath.Join(t.TempDir(), "app")
	stdout := &ostest.SyncBuffer{}
	env := Env{Getenv: func(string) string { return "" }, Stdout: stdout, Stderr: io.Discard}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"setup", "--github-url", sim.APIURL(), "--org", "acme", "--out", out,
			"--manifest", "../../app.yml", "--name", "agentbot-e2e", "--webhook-url", "https://bot.example.com/webhook"}, env)
	}()

	var base string
	for base == "" {
		select {
		case err := <-done:
			t.Fatalf("setup ended before serving its page: %v\n%s", err, stdout)
		case <-time.After(10 * time.Millisecond):
		}
		if m := openLine.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
	}

	page := getPage(t, base+"/")
	action, manifest := formAction.FindStringSubmatch(page), formValue.FindStringSubmatch(page)
	if action == nil || manifest == nil {
		t.Fatalf("no manifest form in the page:\n%s", page)
	}
	target := html.UnescapeString(action[1])
	if !strings.HasPrefix(target, sim.URL()+"/organizations/acme/settings/apps/new?state=") {
		t.Errorf("the form posts to %s", target)
	}
	sent := html.UnescapeString(manifest[1])
	for _, want := range []string{`"name":"agentbot-e2e"`, `"redirect_url":"` + base + `/callback"`, `"url":"https://bot.example.com/webhook"`, `"contents":"write"`} {
		if !strings.Contains(sent, want) {
			t.Errorf("manifest %s lacks %s", sent, want)
		}
	}

	// A redirect carrying another state is refused, and the flow goes on.
	resp, err := http.Get(base + "/callback?code=stolen&state=forged")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("forged state answered %d, want 400", resp.StatusCode)
	}

	// The user confirms on GitHub: the form is posted and GitHub redirects
	// the browser back to setup's callback.
	resp, err = http.PostForm(target, url.Values{"manifest": {sent}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "is registered") {
		t.Fatalf("callback answered %d: %s", resp.StatusCode, body)
	}
	if err := <-done; err != nil {
		t.Fatalf("setup: %v\n%s", err, stdout)
	}

	simApp := sim.App()
	if simApp.Name != "agentbot-e2e" {
		t.Errorf("GitHub registered %q", simApp.Name)
	}
	want := map[string]struct {
		content string
		mode    os.FileMode
	}{
		appDirAppID:         {strconv.FormatInt(simApp.ID, 10) + "\n", 0o644},
		appDirClientID:      {simApp.ClientID + "\n", 0o644},
		appDirGitHubURL:     {sim.APIURL() + "\n", 0o644},
		appDirPrivateKey:    {string(simApp.PrivateKeyPEM), 0o600},
		appDirWebhookSecret: {simApp.WebhookSecret, 0o600},
		appDirClientSecret:  {simApp.ClientSecret, 0o600},
	}
	for name, w := range want {
		p := filepath.Join(out, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(p)
		if string(b) != w.content || fi.Mode().Perm() != w.mode {
			t.Errorf("%s: %q mode %v, want %q mode %v", name, b, fi.Mode().Perm(), w.content, w.mode)
		}
	}
	if !strings.Contains(stdout.String(), "agentbot serve --app-dir "+out) {
		t.Errorf("no next step printed:\n%s", stdout)
	}

	// What setup wrote is a working identity.
	fs := newFlagSet("serve", env)
	af := addAppFlags(fs)
	if err := parseFlags(fs, []string{"--app-dir", out}, env); err != nil {
		t.Fatal(err)
	}
	id, err := af.identity()
	if err != nil {
		t.Fatal(err)
	}
	gh, err := github.NewApp(id.Config)
	if err != nil {
		t.Fatal(err)
	}
	inst := sim.AddInstallation("acme")
	if err := sim.AddRepo(inst, "acme/a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := gh.Token(ctx, inst, "acme/a", app.TokenPermissions{Contents: "read"}); err != nil {
		t.Errorf("the written credentials do not authenticate: %v", err)
	}
}

func getPage(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
	return string(b)
}

func TestSetupRefusesBadInput(t *testing.T) {
	t.Parallel()
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, appDirPrivateKey), []byte("existing key"), 0o600); err != nil {
		t.Fatal(err)
	}
	badManifest := filepath.Join(t.TempDir(), "app.yml")
	if err := os.WriteFile(badManifest, []byte("name: x\nurl: https://x\npermissions: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no --out", []string{"--manifest", "../../app.yml"}, "--out DIR is required"},
		{"an App already in --out", []string{"--out", used, "--manifest", "../../app.yml"}, "already holds an App"},
		{"no manifest", []string{"--out", t.TempDir(), "--manifest", "missing.yml"}, "no such file"},
		{"a manifest with an unknown key", []string{"--out", t.TempDir(), "--manifest", badManifest}, "permissions"},
		{"a bad GitHub URL", []string{"--out", t.TempDir(), "--manifest", "../../app.yml", "--github-url", "ghe.example.com"}, "not an absolute URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Getenv: func(string) string { return "" }, Stdout: io.Discard, Stderr: io.Discard}
			err := run(t.Context(), append([]string{"setup", "--timeout", "1s"}, tc.args...), env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(used, appDirPrivateKey)); string(b) != "existing key" {
		t.Errorf("the existing key became %q", b)
	}
}

// TestSetupOutsideTheRepository: with no --manifest, setup uses the
// manifest built into the binary, so it works from any directory (and
// from the image); without --webhook-url it warns that the manifest's
// placeholder URL will receive the webhooks.
func TestSetupOutsideTheRepository(t *testing.T) {
	t.Chdir(t.TempDir())
	stdout, stderr := &ostest.SyncBuffer{}, &ostest.SyncBuffer{}
	env := Env{Getenv: func(string) string { return "" }, Stdout: stdout, Stderr: stderr}
	err := run(t.Context(), []string{"setup", "--out", filepath.Join(t.TempDir(), "app"), "--timeout", "200ms"}, env)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("setup without a browser = %v; want it to time out waiting", err)
	}
	if !strings.Contains(stdout.String(), `register the App "agentbot"`) {
		t.Errorf("setup did not offer the built-in manifest's App:\n%s", stdout)
	}
	want := "warning: no --webhook-url: GitHub will deliver webhooks to https://agentbot.example.com/webhook, from the built-in app.yml"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
}
