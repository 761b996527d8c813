package policy

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/app"
)

// Registry is one entry of the server config's setup.registries: the
// package registry setup's commands of one ecosystem use, told to them by
// the variables their package manager reads, and allowed through the
// egress proxy without being listed in setup.allow_hosts.
type Registry struct {
	Ecosystem string // "go", "pypi", "npm"
	URL       *url.URL
	// Host is URL's host and port (the scheme's port when it names none):
	// the only destination Credentials are sent to.
	Host app.AllowHost
	// Hosts are other hosts the registry sends its clients to (a file
	// server, a checksum database); they get no credentials.
	Hosts []app.AllowHost
	// SumDB and NoSumDB are Go's GOSUMDB and GONOSUMDB, "" when the
	// operator says nothing.
	SumDB   string
	NoSumDB []string
	// Credentials, when set, are what the egress proxy adds to the
	// requests to Host; they never reach the setup container.
	Credentials *RegistryCredentials
}

// RegistryCredentials say where the worker finds a registry's credentials
// (a file of its secrets, or one of its environment variables) and how
// they are sent.
type RegistryCredentials struct {
	File   string // absolute, or relative to the server config's directory
	Env    string
	Scheme string // "basic": the secret is user:password; "bearer": a token
}

// rawRegistries is setup.registries: one key per ecosystem, so that an
// ecosystem agentbot does not know is an unknown key.
type rawRegistries struct {
	Go   *rawRegistry `yaml:"go"`
	PyPI *rawRegistry `yaml:"pypi"`
	NPM  *rawRegistry `yaml:"npm"`
}

type rawRegistry struct {
	URL         *string         `yaml:"url"`
	Hosts       []string        `yaml:"hosts"`
	SumDB       *string         `yaml:"sumdb"`
	NoSumDB     []string        `yaml:"nosumdb"`
	Credentials *rawCredentials `yaml:"credentials"`
}

type rawCredentials struct {
	File   *string `yaml:"file"`
	Env    *string `yaml:"env"`
	Scheme *string `yaml:"scheme"`
}

// parseRegistries reads setup.registries; dir is the server config's
// directory, against which a relative credentials file is read.
func parseRegistries(raw rawRegistries, dir string, fail func(path, format string, args ...any)) []Registry {
	var regs []Registry
	for _, e := range []struct {
		name string
		raw  *rawRegistry
	}{{"go", raw.Go}, {"npm", raw.NPM}, {"pypi", raw.PyPI}} {
		if e.raw == nil {
			continue
		}
		path := "setup.registries." + e.name
		if r, ok := parseRegistry(e.name, path, *e.raw, dir, fail); ok {
			regs = append(regs, r)
		}
	}
	return regs
}

func parseRegistry(ecosystem, path string, raw rawRegistry, dir string, fail func(path, format string, args ...any)) (Registry, bool) {
	r := Registry{Ecosystem: ecosystem}
	ok := true
	bad := func(key, format string, args ...any) {
		fail(path+"."+key, format, args...)
		ok = false
	}
	if raw.URL == nil {
		bad("url", "is missing: the registry's address, such as %s", map[string]string{
			"go": "https://goproxy.example.com", "pypi": "https://pypi.example.com/simple/", "npm": "https://npm.example.com/"}[ecosystem])
	} else if u, host, err := registryURL(*raw.URL); err != nil {
		bad("url", "%v", err)
	} else {
		r.URL, r.Host = u, host
	}
	for i, h := range raw.Hosts {
		a, err := app.ParseAllowHost(h)
		if err != nil {
			bad(fmt.Sprintf("hosts[%d]", i), "%v", err)
			continue
		}
		r.Hosts = append(r.Hosts, a)
	}
	if ecosystem != "go" {
		if raw.SumDB != nil {
			bad("sumdb", "is Go's checksum database; only setup.registries.go has one")
		}
		if raw.NoSumDB != nil {
			bad("nosumdb", "is Go's checksum database's exceptions; only setup.registries.go has them")
		}
	}
	if raw.SumDB != nil {
		host, err := sumDBHost(*raw.SumDB)
		if err != nil {
			bad("sumdb", "%v", err)
		} else if host != nil {
			r.Hosts = append(r.Hosts, *host)
		}
		r.SumDB = *raw.SumDB
	}
	for i, p := range raw.NoSumDB {
		if p == "" || strings.ContainsAny(p, ", \t") {
			bad(fmt.Sprintf("nosumdb[%d]", i), "%q is not a module path pattern such as corp.example.com/*", p)
		}
	}
	r.NoSumDB = raw.NoSumDB
	if c := raw.Credentials; c != nil {
		r.Credentials = parseCredentials(*c, dir, func(key, format string, args ...any) { bad("credentials."+key, format, args...) })
	}
	return r, ok
}

// registryURL checks a registry's address: http or https, a host, and
// neither credentials (they belong in credentials:, read by the worker
// alone) nor a query.
func registryURL(s string) (*url.URL, app.AllowHost, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, app.AllowHost{}, fmt.Errorf("%q is not a URL: %v", s, err)
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, app.AllowHost{}, fmt.Errorf("%q: write an http:// or https:// URL", s)
	case u.User != nil:
		return nil, app.AllowHost{}, fmt.Errorf("%q holds credentials, which would reach every setup container: name a file or variable under credentials instead", u.Redacted())
	case u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		return nil, app.AllowHost{}, fmt.Errorf("%q: write the registry's address with a host and no query", s)
	}
	authority := u.Host
	if u.Port() == "" {
		authority = u.Host + ":" + map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	host, err := app.ParseAllowHost(authority)
	if err != nil {
		return nil, app.AllowHost{}, err
	}
	return u, host, nil
}

// sumDBHost is the host GOSUMDB's value reaches: "off", a name
// (sum.golang.org, sum.golang.org+key) or a name and key with its URL.
func sumDBHost(s string) (*app.AllowHost, error) {
	if s == "off" {
		return nil, nil
	}
	name, addr, hasURL := strings.Cut(s, " ")
	if hasURL {
		u, err := url.Parse(strings.TrimSpace(addr))
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("%q: the checksum database's URL %q is not a URL", s, addr)
		}
		name = u.Host
	} else {
		name, _, _ = strings.Cut(name, "+")
	}
	h, err := app.ParseAllowHost(name)
	if err != nil {
		return nil, fmt.Errorf("%q is not \"off\", a checksum database's name or name+key URL: %v", s, err)
	}
	return &h, nil
}

func parseCredentials(raw rawCredentials, dir string, bad func(key, format string, args ...any)) *RegistryCredentials {
	c := &RegistryCredentials{Scheme: "basic"}
	switch {
	case raw.File != nil && raw.Env != nil:
		bad("file", "and credentials.env are both set; name one place the worker reads the secret from")
	case raw.File != nil && *raw.File != "":
		c.File = *raw.File
		if !filepath.IsAbs(c.File) {
			c.File = filepath.Join(dir, c.File)
		}
	case raw.Env != nil && *raw.Env != "" && !strings.ContainsAny(*raw.Env, "= \t"):
		c.Env = *raw.Env
	case raw.Env != nil:
		bad("env", "%q is not an environment variable's name", *raw.Env)
	default:
		bad("file", "is missing: a file of the worker's secrets holding the credentials, or credentials.env naming a variable of the worker's")
	}
	if raw.Scheme != nil {
		c.Scheme = *raw.Scheme
		if c.Scheme != "basic" && c.Scheme != "bearer" {
			bad("scheme", "%q is not basic (the secret is user:password) or bearer (the secret is a token)", c.Scheme)
		}
	}
	return c
}

// Authorization reads the credentials where the worker keeps them, with
// getenv for its environment, and returns the Authorization header's
// value. Errors never hold the secret.
func (c RegistryCredentials) Authorization(getenv func(string) string) (string, error) {
	var secret, from string
	if c.File != "" {
		from = c.File
		b, err := os.ReadFile(c.File)
		if err != nil {
			return "", fmt.Errorf("read the registry's credentials: %w", err)
		}
		secret = string(b)
	} else {
		from = "$" + c.Env
		secret = getenv(c.Env)
	}
	secret = strings.TrimRight(secret, "\r\n")
	switch {
	case secret == "":
		return "", fmt.Errorf("the registry's credentials in %s are empty", from)
	case strings.ContainsAny(secret, "\r\n\x00"):
		return "", fmt.Errorf("the registry's credentials in %s span lines; write one line", from)
	case c.Scheme == "bearer":
		return "Bearer " + secret, nil
	case !strings.Contains(secret, ":"):
		return "", errors.New("the registry's credentials in " + from + " are not user:password, as scheme basic needs")
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(secret)), nil
}

// AllowedHosts are the destinations setup reaches for r: its own host and
// the others it names.
func (r Registry) AllowedHosts() []app.AllowHost {
	return append([]app.AllowHost{r.Host}, r.Hosts...)
}

// Env are the variables that point r's ecosystem's package managers at it.
func (r Registry) Env() []string {
	u := r.URL.String()
	switch r.Ecosystem {
	case "go":
		env := []string{"GOPROXY=" + u}
		if r.SumDB != "" {
			env = append(env, "GOSUMDB="+r.SumDB)
		}
		if len(r.NoSumDB) > 0 {
			env = append(env, "GONOSUMDB="+strings.Join(r.NoSumDB, ","))
		}
		return env
	case "pypi":
		env := []string{"PIP_INDEX_URL=" + u}
		if r.URL.Scheme == "http" {
			// pip refuses an http index unless its host is trusted.
			env = append(env, "PIP_TRUSTED_HOST="+r.URL.Host)
		}
		return env
	case "npm":
		// npm, yarn 1 and pnpm read npm_config_registry.
		return []string{"npm_config_registry=" + u}
	}
	return nil
}
