package policy

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestServerConfigRegistries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := ParseServerConfig(filepath.Join(dir, "server.yaml"), []byte(`
setup:
  allow_network: true
  registries:
    go:
      url: https://goproxy.corp.example
      sumdb: sum.golang.org
      nosumdb: ["corp.example/*", "git.corp.example/*"]
    pypi:
      url: http://10.1.2.3:8081/simple/
      hosts: [files.corp.example]
      credentials: {file: secrets/pypi}
    npm:
      url: https://npm.corp.example/
      credentials: {env: NPM_TOKEN, scheme: bearer}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SetupAllowHosts) != 0 {
		t.Errorf("allow_hosts %v: the registries' hosts are the registries' own", c.SetupAllowHosts)
	}
	var env, hosts []string
	for _, r := range c.SetupRegistries {
		env = append(env, r.Env()...)
		for _, h := range r.AllowedHosts() {
			hosts = append(hosts, h.String())
		}
	}
	wantEnv := []string{"GOPROXY=https://goproxy.corp.example", "GOSUMDB=sum.golang.org", "GONOSUMDB=corp.example/*,git.corp.example/*",
		"npm_config_registry=https://npm.corp.example/",
		"PIP_INDEX_URL=http://10.1.2.3:8081/simple/", "PIP_TRUSTED_HOST=10.1.2.3:8081"}
	if !reflect.DeepEqual(env, wantEnv) {
		t.Errorf("env\n%q\nwant\n%q", env, wantEnv)
	}
	wantHosts := []string{"goproxy.corp.example:443", "sum.golang.org", "npm.corp.example:443", "10.1.2.3:8081", "files.corp.example"}
	if !reflect.DeepEqual(hosts, wantHosts) {
		t.Errorf("hosts %q, want %q", hosts, wantHosts)
	}
	pypi, npm := c.SetupRegistries[2], c.SetupRegistries[1]
	if want := (RegistryCredentials{File: filepath.Join(dir, "secrets/pypi"), Scheme: "basic"}); *pypi.Credentials != want {
		t.Errorf("pypi credentials %+v, want %+v (relative to the config's directory)", *pypi.Credentials, want)
	}
	if want := (RegistryCredentials{Env: "NPM_TOKEN", Scheme: "bearer"}); *npm.Credentials != want {
		t.Errorf("npm credentials %+v, want %+v", *npm.Credentials, want)
	}
}

func TestRegistryCredentialsAuthorization(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "pypi")
	if err := os.WriteFile(file, []byte("ci:s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := map[string]string{"TOKEN": "tok-123", "EMPTY": "", "TWO": "a\nb"}
	lookup := func(k string) string { return getenv[k] }
	basic, err := RegistryCredentials{File: file, Scheme: "basic"}.Authorization(lookup)
	if want := "Basic " + base64.StdEncoding.EncodeToString([]byte("ci:s3cret")); err != nil || basic != want {
		t.Errorf("basic from a file: %q, %v; want %q", basic, err, want)
	}
	if bearer, err := (RegistryCredentials{Env: "TOKEN", Scheme: "bearer"}).Authorization(lookup); err != nil || bearer != "Bearer tok-123" {
		t.Errorf("bearer from the environment: %q, %v", bearer, err)
	}
	for name, tt := range map[string]struct {
		c    RegistryCredentials
		want string
	}{
		"missing file":  {RegistryCredentials{File: filepath.Join(dir, "none"), Scheme: "basic"}, "no such file"},
		"empty":         {RegistryCredentials{Env: "EMPTY", Scheme: "bearer"}, "in $EMPTY are empty"},
		"two lines":     {RegistryCredentials{Env: "TWO", Scheme: "bearer"}, "span lines"},
		"basic no user": {RegistryCredentials{Env: "TOKEN", Scheme: "basic"}, "not user:password"},
	} {
		_, err := tt.c.Authorization(lookup)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "tok-123") {
			t.Errorf("%s: the error holds the secret: %v", name, err)
		}
	}
}

func TestServerConfigRegistryErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, yaml, want string }{
		{"unknown ecosystem", "setup:\n  registries:\n    pip: {url: https://x.example/}\n",
			`server.yaml:3: setup.registries.pip: unknown key (did you mean "pypi"?)`},
		{"no url", "setup:\n  registries:\n    npm: {hosts: [x.example]}\n",
			"server.yaml:3: setup.registries.npm.url: is missing: the registry's address, such as https://npm.example.com/"},
		{"credentials in the url", "setup:\n  registries:\n    pypi: {url: \"https://ci:pw@pypi.example/simple/\"}\n",
			`server.yaml:3: setup.registries.pypi.url: "https://ci:xxxxx@pypi.example/simple/" holds credentials, which would reach every setup container: name a file or variable under credentials instead`},
		{"not http", "setup:\n  registries:\n    go: {url: \"file:///srv/goproxy\"}\n",
			`server.yaml:3: setup.registries.go.url: "file:///srv/goproxy": write an http:// or https:// URL`},
		{"sumdb outside go", "setup:\n  registries:\n    npm: {url: \"https://npm.example/\", sumdb: \"off\"}\n",
			"server.yaml:3: setup.registries.npm.sumdb: is Go's checksum database; only setup.registries.go has one"},
		{"bad credentials", "setup:\n  registries:\n    npm:\n      url: https://npm.example/\n      credentials: {scheme: digest}\n",
			"server.yaml:5: setup.registries.npm.credentials.file: is missing: a file of the worker's secrets holding the credentials, or credentials.env naming a variable of the worker's\n" +
				`server.yaml:5: setup.registries.npm.credentials.scheme: "digest" is not basic (the secret is user:password) or bearer (the secret is a token)`},
		{"both file and env", "setup:\n  registries:\n    npm:\n      url: https://npm.example/\n      credentials: {file: /s, env: T}\n",
			"server.yaml:5: setup.registries.npm.credentials.file: and credentials.env are both set; name one place the worker reads the secret from"},
		{"bad extra host", "setup:\n  registries:\n    pypi:\n      url: https://pypi.example/simple/\n      hosts: [169.254.169.254]\n",
			`server.yaml:5: setup.registries.pypi.hosts[0]: "169.254.169.254" is a link-local (cloud metadata) address, which setup may never reach`},
		{"ca file not a certificate", "setup:\n  ca_file: registries.go\n",
			`server.yaml:2: setup.ca_file: holds no PEM certificate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseServerConfig("server.yaml", []byte(tt.yaml))
			if got := errorText(err); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
