package runner

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestIsAttachment(t *testing.T) {
	t.Parallel()
	web, _ := url.Parse("https://github.com/acme/stats")
	for raw, want := range map[string]bool{
		"https://github.com/user-attachments/assets/1a2b":                   true,
		"https://user-images.githubusercontent.com/1/2.png":                 true,
		"https://private-user-images.githubusercontent.com/1/2.png?jwt=x":   true,
		"http://user-images.githubusercontent.com/1/2.png":                  false,
		"https://github.com/acme/stats/raw/main/x.png":                      false,
		"https://github.com.evil.example/user-attachments/assets/1":         false,
		"https://x@github.com/user-attachments/assets/1":                    false,
		"http://169.254.169.254/latest/meta-data":                           false,
		"https://objects.githubusercontent.com/github-production-release/1": false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := isAttachment(u, web); got != want {
			t.Errorf("isAttachment(%s) = %v; want %v", raw, got, want)
		}
	}
}

// An attachment that redirects off GitHub is not followed.
func TestAttachmentRedirectsStayWithGitHub(t *testing.T) {
	t.Parallel()
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://evil.example/x.png", http.StatusFound)
	}))
	defer gh.Close()
	web, _ := url.Parse(gh.URL + "/acme/stats")
	_, err := fetchAttachment(t.Context(), imageClient(web), web, gh.URL+"/user-attachments/assets/1")
	if err == nil || !strings.Contains(err.Error(), "redirected to https://evil.example/x.png") {
		t.Errorf("fetch redirected off GitHub: %v; want the redirect refused", err)
	}
	for raw, want := range map[string]bool{
		"https://private-user-images.githubusercontent.com/1/2.png?jwt=x":             true,
		"https://github-production-user-asset-6210df.s3.amazonaws.com/1/2.png":        true,
		"https://evil.s3.amazonaws.com/1/2.png":                                       false,
		"https://github-production-user-asset-6210df.s3.amazonaws.com.evil.example/1": false,
		gh.URL + "/user-attachments/assets/2":                                         true,
	} {
		u, _ := url.Parse(raw)
		if got := redirectAllowed(u, web); got != want {
			t.Errorf("redirectAllowed(%s) = %v, want %v", raw, got, want)
		}
	}
}

// A connection to a host other than GitHub's own, an attachment host that
// resolves (or is redirected) to an internal address, is refused on the
// address dialled; GitHub's own host, which the operator configured, is
// reached wherever it is.
func TestAttachmentDialsRefuseInternalAddresses(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	web, _ := url.Parse("http://localhost:" + port + "/acme/stats")
	dial := attachmentDialer(web, func(string) bool { return false })
	for _, addr := range []string{"127.0.0.1:" + port, "[::ffff:127.0.0.1]:" + port} {
		if c, err := dial(t.Context(), "tcp", addr); err == nil || !strings.Contains(err.Error(), "internal address") {
			if c != nil {
				c.Close()
			}
			t.Errorf("dial %s: %v; want it refused as internal", addr, err)
		}
	}
	c, err := dial(t.Context(), "tcp", "localhost:"+port)
	if err != nil {
		t.Fatalf("dial GitHub's own host: %v", err)
	}
	c.Close()
	trusted := attachmentDialer(web, func(h string) bool { return h == "127.0.0.1" })
	if c, err := trusted(t.Context(), "tcp", "127.0.0.1:"+port); err != nil {
		t.Errorf("dial the worker's own proxy: %v", err)
	} else {
		c.Close()
	}
}
