package github

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func TestInstallationCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewApp(Config{
		AppID:         1,
		PrivateKey:    pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		Installations: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id int64) *Installation {
		i, err := g.Installation(id, "acme/a")
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	one, two := get(1), get(2)
	if get(1) != one { // 1 is now the most recently used
		t.Fatal("installation 1 was not cached")
	}
	get(3) // evicts 2
	if get(1) != one {
		t.Error("installation 1 was evicted though used more recently than 2")
	}
	if get(2) == two {
		t.Error("installation 2 stayed cached beyond the cache's size")
	}
	if len(g.cache) != 2 || g.lru.Len() != 2 {
		t.Errorf("cache holds %d/%d entries, want 2", len(g.cache), g.lru.Len())
	}
	if again, _ := g.Installation(1, "ACME/A"); again != one {
		t.Error("acme/a under another case got a new client")
	}
	// A client is scoped to one repository: another repository of the same
	// installation gets its own client, and so its own token.
	b, err := g.Installation(1, "acme/b")
	if err != nil {
		t.Fatal(err)
	}
	if b == one || b.Repo() != "acme/b" {
		t.Errorf("acme/b got the client of %s", b.Repo())
	}
	if _, err := g.Installation(1, "acme"); err == nil {
		t.Error("a repository name without an owner was accepted")
	}
}

func TestNewAppRefusesABadIdentity(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no app id":   {PrivateKey: []byte("x")},
		"no key":      {AppID: 1},
		"garbled key": {AppID: 1, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")},
		"bad url":     {AppID: 1, PrivateKey: []byte("x"), APIURL: "not a url"},
	} {
		if _, err := NewApp(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestWebURL(t *testing.T) {
	t.Parallel()
	for api, want := range map[string]string{
		"https://api.github.com":          "https://github.com",
		"https://api.github.com/":         "https://github.com",
		"https://ghe.example.com/api/v3":  "https://ghe.example.com",
		"https://ghe.example.com/api/v3/": "https://ghe.example.com",
		"http://127.0.0.1:8080/api/v3":    "http://127.0.0.1:8080",
	} {
		if got, err := WebURL(api); err != nil || got != want {
			t.Errorf("WebURL(%q) = %q, %v; want %q", api, got, err, want)
		}
	}
}
