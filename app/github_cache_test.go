package app

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
)

func TestInstallationCacheEvictsTheLeastRecentlyUsed(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGitHubApp(GitHubConfig{
		AppID:         1,
		PrivateKey:    pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		Installations: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	get := func(id int64) *Installation {
		i, err := g.Installation(id)
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
	if len(g.byID) != 2 || g.lru.Len() != 2 {
		t.Errorf("cache holds %d/%d entries, want 2", len(g.byID), g.lru.Len())
	}
}

func TestNewGitHubAppRefusesABadIdentity(t *testing.T) {
	for name, cfg := range map[string]GitHubConfig{
		"no app id":   {PrivateKey: []byte("x")},
		"no key":      {AppID: 1},
		"garbled key": {AppID: 1, PrivateKey: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")},
		"bad url":     {AppID: 1, PrivateKey: []byte("x"), APIURL: "not a url"},
	} {
		if _, err := NewGitHubApp(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestWebURL(t *testing.T) {
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
