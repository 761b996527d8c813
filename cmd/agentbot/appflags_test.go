package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app/github"
)

func TestAppFlags(t *testing.T) {
	t.Parallel()
	keyFile := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(keyFile, []byte("FLAG KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	appDir := filepath.Join(t.TempDir(), "app")
	creds := github.AppCredentials{ID: 9, ClientID: "Iv1.x", ClientSecret: "cs", WebhookSecret: "whs", PEM: "DIR KEY"}
	if err := writeAppDir(appDir, creds, "https://ghe.example.com/api/v3"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		id      int64
		key     string
		url     string
		secret  string
		wantErr string
	}{
		{name: "flags", args: []string{"--app-id", "7", "--private-key-file", keyFile},
			id: 7, key: "FLAG KEY", url: github.PublicAPIURL},
		{name: "environment", env: map[string]string{"AGENTBOT_APP_ID": "8", "AGENTBOT_PRIVATE_KEY_FILE": keyFile, "AGENTBOT_GITHUB_URL": "https://ghe.example.com/api/v3"},
			id: 8, key: "FLAG KEY", url: "https://ghe.example.com/api/v3"},
		{name: "app dir", args: []string{"--app-dir", appDir},
			id: 9, key: "DIR KEY", url: "https://ghe.example.com/api/v3", secret: "whs"},
		{name: "flags win over the app dir", args: []string{"--app-dir", appDir, "--app-id", "10", "--private-key-file", keyFile, "--github-url", "http://127.0.0.1:1/api/v3"},
			id: 10, key: "FLAG KEY", url: "http://127.0.0.1:1/api/v3", secret: "whs"},
		{name: "no id", args: []string{"--private-key-file", keyFile}, wantErr: "--app-id"},
		{name: "no key", args: []string{"--app-id", "7"}, wantErr: "--private-key-file"},
		{name: "key file missing", args: []string{"--app-id", "7", "--private-key-file", keyFile + ".gone"}, wantErr: "no such file"},
		{name: "app dir missing", args: []string{"--app-dir", appDir + ".gone"}, wantErr: "--app-id"},
		{name: "bad app id", args: []string{"--app-id", "seven"}, wantErr: "invalid value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := Env{Getenv: func(k string) string { return tc.env[k] }, Stderr: &bytes.Buffer{}}
			fs := newFlagSet("serve", env)
			af := addAppFlags(fs)
			err := parseFlags(fs, tc.args, env)
			var id appIdentity
			if err == nil {
				id, err = af.identity()
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := id.Config
			if c.AppID != tc.id || string(c.PrivateKey) != tc.key || c.APIURL != tc.url || string(id.WebhookSecret) != tc.secret {
				t.Errorf("got id %d key %q url %q secret %q", c.AppID, c.PrivateKey, c.APIURL, id.WebhookSecret)
			}
		})
	}
}

func TestWriteAppDirModesAndNoOverwrite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "app")
	creds := github.AppCredentials{ID: 1, ClientID: "c", ClientSecret: "s", WebhookSecret: "w", PEM: "k"}
	if err := writeAppDir(dir, creds, github.PublicAPIURL); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{
		appDirAppID: 0o644, appDirClientID: 0o644, appDirGitHubURL: 0o644,
		appDirPrivateKey: 0o600, appDirWebhookSecret: 0o600, appDirClientSecret: 0o600,
	} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	creds.PEM = "another key"
	if err := writeAppDir(dir, creds, github.PublicAPIURL); err == nil {
		t.Error("an existing App directory was overwritten")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, appDirPrivateKey)); string(b) != "k" {
		t.Errorf("private key now %q", b)
	}
}
