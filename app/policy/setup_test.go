package policy

import (
	"slices"
	"testing"
)

func TestSetupCacheKeyFiles(t *testing.T) {
	_, err := ParsePolicy(PolicyPath, []byte("setup: {cache_key_files: [\"tools/*.lock\", \"[bad\"]}\n"))
	if got, want := errorText(err), `.github/agent.yml:1: setup.cache_key_files[1]: "[bad" is not a valid glob (see https://github.com/bmatcuk/doublestar#patterns)`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	raw, err := ParsePolicy(PolicyPath, []byte("setup: {cache_key_files: [\"tools/*.lock\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildPolicy(DefaultServerConfig(), raw)
	if err != nil || !slices.Equal(p.Setup.CacheKeyFiles, []string{"tools/*.lock"}) {
		t.Fatalf("got %q, %v", p.Setup.CacheKeyFiles, err)
	}
}

func TestWithDefaultImage(t *testing.T) {
	if got := DefaultServerConfig().WithDefaultImage("agentbot-sandbox:env-go").DefaultImage; got != "agentbot-sandbox:env-go" {
		t.Errorf("without a file: %q", got)
	}
	c, err := ParseServerConfig("server.yaml", []byte("sandbox: {images: [\"img:*\"], default_image: \"img:1\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.WithDefaultImage("agentbot-sandbox:dev").DefaultImage; got != "img:1" {
		t.Errorf("the file's default_image was overridden: %q", got)
	}
	if got := DefaultServerConfig().WithDefaultImage("").DefaultImage; got != "agentbot-sandbox:dev" {
		t.Errorf("an empty flag changed the default: %q", got)
	}
}
