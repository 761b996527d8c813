package runner

import (
	"net/url"
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
