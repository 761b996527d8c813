package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbot/agentbot/app/github"
)

// The files of an App directory, as "agentbot setup" writes them and
// --app-dir reads them. Secrets are mode 0600.
const (
	appDirAppID         = "app-id"
	appDirPrivateKey    = "private-key.pem"
	appDirWebhookSecret = "webhook-secret"
	appDirClientID      = "client-id"
	appDirClientSecret  = "client-secret"
	appDirGitHubURL     = "github-url"
)

// appFlags are the GitHub App identity flags that serve, worker and setup
// share. Register them with addAppFlags before parseFlags, then call
// identity:
//
//	af := addAppFlags(fs)
//	if err := parseFlags(fs, args, env); err != nil { ... }
//	id, err := af.identity()
//	gh, err := github.NewApp(id.Config) // set Logger, CallTimeout as needed
type appFlags struct {
	appID     int64
	keyFile   string
	githubURL string
	appDir    string
}

func addAppFlags(fs *flag.FlagSet) *appFlags {
	f := &appFlags{}
	fs.Int64Var(&f.appID, "app-id", 0, "the GitHub App's id")
	fs.StringVar(&f.keyFile, "private-key-file", "", "the GitHub App's private key (PEM)")
	githubURLFlag(fs, &f.githubURL)
	fs.StringVar(&f.appDir, "app-dir", "", "a directory written by 'agentbot setup'; supplies what the flags above leave unset")
	return f
}

// githubURLFlag registers --github-url. Its default is empty so that an
// App directory's URL applies when the flag is not given; see apiURL.
func githubURLFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "github-url", "", "GitHub's REST API root: "+github.PublicAPIURL+" (default), https://HOST/api/v3 for GitHub Enterprise Server")
}

// apiURL returns the first URL set, or github.com's.
func apiURL(urls ...string) string {
	for _, u := range urls {
		if u != "" {
			return u
		}
	}
	return github.PublicAPIURL
}

// appIdentity is the App's identity as the flags and the App directory say.
type appIdentity struct {
	Config github.Config
	// WebhookSecret is the App directory's webhook secret, empty without
	// --app-dir.
	WebhookSecret []byte
}

// identity resolves the flags: an explicit flag (or its AGENTBOT_*
// variable) wins over the App directory.
func (f *appFlags) identity() (appIdentity, error) {
	var id appIdentity
	id.Config.AppID = f.appID
	keyFile, dirURL := f.keyFile, ""
	if f.appDir != "" {
		read := func(name string) (string, error) {
			b, err := os.ReadFile(filepath.Join(f.appDir, name))
			if errors.Is(err, os.ErrNotExist) {
				return "", nil
			}
			return strings.TrimSpace(string(b)), err
		}
		if id.Config.AppID == 0 {
			s, err := read(appDirAppID)
			if err != nil {
				return id, fmt.Errorf("app dir: %w", err)
			}
			if s != "" {
				if id.Config.AppID, err = strconv.ParseInt(s, 10, 64); err != nil {
					return id, fmt.Errorf("app dir: %s: %q is not an App id", appDirAppID, s)
				}
			}
		}
		if keyFile == "" {
			keyFile = filepath.Join(f.appDir, appDirPrivateKey)
		}
		var err error
		if dirURL, err = read(appDirGitHubURL); err != nil {
			return id, fmt.Errorf("app dir: %w", err)
		}
		secret, err := read(appDirWebhookSecret)
		if err != nil {
			return id, fmt.Errorf("app dir: %w", err)
		}
		id.WebhookSecret = []byte(secret)
	}
	if id.Config.AppID == 0 {
		return id, errors.New("no GitHub App id: set --app-id (AGENTBOT_APP_ID) or --app-dir")
	}
	if keyFile == "" {
		return id, errors.New("no GitHub App private key: set --private-key-file (AGENTBOT_PRIVATE_KEY_FILE) or --app-dir")
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return id, fmt.Errorf("GitHub App private key: %w", err)
	}
	id.Config.PrivateKey = key
	id.Config.APIURL = apiURL(f.githubURL, dirURL)
	return id, nil
}
