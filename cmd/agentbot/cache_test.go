package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/runner/envcache"
)

func runCache(t *testing.T, args ...string) (string, error) {
	t.Helper()
	env, out, errOut := testEnv(nil)
	err := run(t.Context(), append([]string{"cache"}, args...), env)
	return out.String() + errOut.String(), err
}

func TestCacheListAndPrune(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	c, err := envcache.Open(filepath.Join(data, "envs"), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A checkout of acme/api under agentbot run, and the repository of
	// that name a worker serves, are two owners.
	for key, repo := range map[string]string{"00000000000000a1": "acme/web", "00000000000000b2": "acme/api", "00000000000000c3": "acme/api"} {
		owner := envcache.GitHubOwner(7, int64(len(key)+len(repo)))
		if key == "00000000000000b2" {
			owner = envcache.Owner{Local: "/src/api"}
		}
		b, err := c.Build(envcache.Entry{Key: key, Owner: owner, Repo: repo, Image: "agentbot-sandbox:env-go"}, t.TempDir(), envcache.DefaultMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.Home(), "x"), make([]byte, 8192), 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := b.Publish()
		if err != nil {
			t.Fatal(err)
		}
		env.Release()
	}
	out, err := runCache(t, "list", "--data-dir", data)
	// Each shows whom it serves: a repository by id, or a checkout.
	if err != nil || !strings.Contains(out, "00000000000000a1  github:repo=24,inst=7  acme/web") ||
		!strings.Contains(out, "00000000000000b2  local:/src/api         acme/api") ||
		!strings.Contains(out, "3 environments") || !strings.Contains(out, "of 20GiB") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = runCache(t, "prune", "--data-dir", data, "--repo", "acme/web")
	if err != nil || !strings.HasPrefix(out, "removed 1 environments") {
		t.Fatalf("prune --repo: %v\n%s", err, out)
	}
	out, err = runCache(t, "prune", "--data-dir", data, "--owner", "local:/src/api")
	if err != nil || !strings.HasPrefix(out, "removed 1 environments") {
		t.Fatalf("prune --owner: %v\n%s", err, out)
	}
	if out, _ := runCache(t, "list", "--data-dir", data); strings.Contains(out, "00000000000000b2") || !strings.Contains(out, "00000000000000c3") {
		t.Fatalf("prune --owner removed another owner's environment of the same repository:\n%s", out)
	}
	// Under the cap, a plain prune removes nothing.
	if out, err = runCache(t, "prune", "--data-dir", data); err != nil || !strings.HasPrefix(out, "removed 0 environments") {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	if out, err = runCache(t, "prune", "--data-dir", data, "--env-cache-max", "1KiB"); err != nil || !strings.HasPrefix(out, "removed 1 environments") {
		t.Fatalf("prune over a smaller cap: %v\n%s", err, out)
	}
	if out, _ := runCache(t, "list", "--data-dir", data); !strings.Contains(out, "0 environments") {
		t.Fatalf("list after prune:\n%s", out)
	}
}

// --env-cache-dir puts the environments where the operator says, apart
// from the data directory.
func TestCacheDirApartFromTheDataDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := envcache.Open(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Build(envcache.Entry{Key: "00000000000000c3", Owner: envcache.Owner{Repository: 3}, Repo: "acme/db"}, t.TempDir(), envcache.DefaultMaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	env, err := b.Publish()
	if err != nil {
		t.Fatal(err)
	}
	env.Release()
	data := t.TempDir()
	if out, err := runCache(t, "list", "--data-dir", data, "--env-cache-dir", dir); err != nil || !strings.Contains(out, "00000000000000c3  github:repo=3  acme/db") {
		t.Fatalf("list --env-cache-dir: %v\n%s", err, out)
	}
	if out, err := runCache(t, "list", "--data-dir", data); err != nil || !strings.Contains(out, "0 environments") {
		t.Fatalf("list of the data directory: %v\n%s", err, out)
	}
}

func TestCacheRefusesBadArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, `unknown cache command "--data-dir"`},
		{[]string{"drop"}, `unknown cache command "drop"`},
		{[]string{"list", "--env-cache-max", "lots"}, `"lots" is not a size`},
		{[]string{"list", "extra"}, `unexpected argument "extra"`},
		{[]string{"list", "--all"}, "flag provided but not defined"},
	} {
		out, err := runCache(t, append(tc.args, "--data-dir", t.TempDir())...)
		if err == nil || !strings.Contains(err.Error()+out, tc.want) {
			t.Errorf("cache %q: %v %s; want %q", tc.args, err, out, tc.want)
		}
	}
}
