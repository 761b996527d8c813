package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentbot/agentbot"
	"github.com/agentbot/agentbot/app/github"
)

// cmdSetup registers agentbot as a GitHub App through GitHub's manifest
// flow and writes the App's credentials into an App directory, which
// "agentbot serve --app-dir DIR" then reads.
func cmdSetup(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("setup", env)
	var githubURL string
	githubURLFlag(fs, &githubURL)
	org := fs.String("org", "", "register the App under this organisation instead of your user")
	out := fs.String("out", "", "the App directory to write the credentials into (required; must not hold an App already)")
	manifestFile := fs.String("manifest", "", "the App manifest (default: the app.yml built into this binary)")
	name := fs.String("name", "", "the App's name, unique on GitHub (default: the manifest's)")
	webhookURL := fs.String("webhook-url", "", "where GitHub delivers webhooks, agentbot serve's /webhook (default: the manifest's)")
	listen := fs.String("listen", "127.0.0.1:0", "address of the local registration page")
	timeout := fs.Duration("timeout", 15*time.Minute, "how long to wait for the registration in the browser")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if *out == "" {
		return usageErrorf(fs, "--out DIR is required")
	}
	// Refuse before GitHub creates anything: credentials already in DIR
	// would otherwise be lost, or the new App's would have nowhere to go.
	if _, err := os.Stat(filepath.Join(*out, appDirPrivateKey)); err == nil {
		return fmt.Errorf("setup: %s already holds an App's credentials; choose another --out", *out)
	}
	data, source := agentbot.Manifest, "the built-in app.yml"
	if *manifestFile != "" {
		var err error
		if data, err = os.ReadFile(*manifestFile); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		source = *manifestFile
	}
	m, err := github.ParseManifest(data)
	if err != nil {
		return fmt.Errorf("setup: %s: %w", source, err)
	}
	if *name != "" {
		m.Name = *name
	}
	if *webhookURL != "" {
		m.HookAttributes.URL = *webhookURL
	} else {
		// The manifest's URL is a placeholder: an App registered with it
		// sends its webhooks nowhere until its settings are edited.
		fmt.Fprintf(env.Stderr, "warning: no --webhook-url: GitHub will deliver webhooks to %s, from %s; give the public URL of agentbot serve's /webhook, or change it later in the App's settings\n", m.HookAttributes.URL, source)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("setup: listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	api := apiURL(githubURL)
	flow, err := github.NewManifestFlow(m, api, *org, base, nil)
	if err != nil {
		ln.Close()
		return fmt.Errorf("setup: %w", err)
	}
	srv := &http.Server{Handler: flow, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(shutdown)
	}()

	owner := "your user"
	if *org != "" {
		owner = "the organisation " + *org
	}
	fmt.Fprintf(env.Stdout, "Open %s/ in a browser signed in to GitHub to register the App %q under %s.\n", base, m.Name, owner)

	wait, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	creds, err := flow.Wait(wait)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := writeAppDir(*out, creds, api); err != nil {
		return fmt.Errorf("setup: the App %s was registered but its credentials could not be saved: %w", creds.HTMLURL, err)
	}
	fmt.Fprintf(env.Stdout, "Registered the App %s (id %d) and wrote its credentials to %s.\n", creds.Slug, creds.ID, *out)
	fmt.Fprintf(env.Stdout, "Next: install it on your repositories at %s/installations/new, then run\n  agentbot serve --app-dir %s\n", creds.HTMLURL, *out)
	return nil
}

// writeAppDir writes an App directory; files holding secrets are 0600.
// Existing files are never overwritten.
func writeAppDir(dir string, c github.AppCredentials, apiURL string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	files := []struct {
		name, content string
		mode          os.FileMode
	}{
		{appDirAppID, strconv.FormatInt(c.ID, 10) + "\n", 0o644},
		{appDirClientID, c.ClientID + "\n", 0o644},
		{appDirGitHubURL, apiURL + "\n", 0o644},
		{appDirPrivateKey, c.PEM, 0o600},
		{appDirWebhookSecret, c.WebhookSecret, 0o600},
		{appDirClientSecret, c.ClientSecret, 0o600},
	}
	for _, f := range files {
		w, err := os.OpenFile(filepath.Join(dir, f.name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, f.mode)
		if err != nil {
			return err
		}
		_, err = w.WriteString(f.content)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	return nil
}
