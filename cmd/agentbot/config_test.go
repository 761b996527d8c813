package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
)

// runConfig runs agentbot in-process with args and the given environment,
// returning what it printed and its exit status.
func runConfig(t *testing.T, environ map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{Getenv: func(k string) string { return environ[k] }, Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}
	err := run(context.Background(), args, env)
	if err != nil {
		code = exitCode(err)
		errOut.WriteString("agentbot: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), code
}

func writeConfigFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeConfigFile(t, dir, "good.yml", "checks: [{name: test, run: make test}]\nsetup: {network: true}\nlimits: {iterations: 40}\n")
	nochecks := writeConfigFile(t, dir, "nochecks.yml", "limits: {iterations: 5}\n")
	bad := writeConfigFile(t, dir, "bad.yml", "checks: [{name: test, run: make test}]\nlimits:\n  iterations: thirty\n  tokns: 5\n")
	server := writeConfigFile(t, dir, "server.yaml", "setup: {allow_network: false}\nmax: {limits: {iterations: 30}}\n")
	brokenServer := writeConfigFile(t, dir, "broken.yaml", "max: {limits: {iterations: lots}}\n")
	badHosts := writeConfigFile(t, dir, "hosts.yaml", "setup:\n  allow_network: true\n  allow_hosts: [proxy.golang.org, \"https://pypi.org\", \"169.254.169.254\"]\n")

	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		code       int
		out, errs  string
		errContain string
	}{
		{
			name: "valid files print ok",
			args: []string{good, nochecks},
			out:  good + ": ok\n" + nochecks + ": ok, but no checks are defined: tasks are refused until checks: is set here or in the organisation's .github repository\n",
		},
		{
			name: "errors and exit status 1",
			args: []string{good, bad},
			code: 1,
			out:  good + ": ok\n",
			errs: bad + `:3: limits.iterations: "thirty" is not a whole number` + "\n" +
				bad + `:4: limits.tokns: unknown key (did you mean "tokens"?)` + "\n" +
				"agentbot: 1 of 2 files invalid\n",
		},
		{
			name: "caps of the server config",
			args: []string{"--config", server, good},
			code: 1,
			out:  server + ": ok\n",
			errs: good + ":2: setup.network: this server does not allow network during setup; set it to false, or ask the operator\n" +
				good + ":3: limits.iterations: 40 is above this server's cap of 30\n" +
				"agentbot: 1 of 1 files invalid\n",
		},
		{
			name: "server config from the environment",
			env:  map[string]string{"AGENTBOT_CONFIG": server},
			args: []string{nochecks},
			out:  server + ": ok\n" + nochecks + ": ok, but no checks are defined: tasks are refused until checks: is set here or in the organisation's .github repository\n",
		},
		{
			name: "broken server config",
			args: []string{"--config", brokenServer, good},
			code: 1,
			errs: brokenServer + `:1: max.limits.iterations: "lots" is not a whole number` + "\n" +
				"agentbot: server config " + brokenServer + " is invalid\n",
		},
		{
			name: "setup.allow_hosts entries",
			args: []string{"--config", badHosts},
			code: 1,
			errs: badHosts + `:3: setup.allow_hosts[1]: "https://pypi.org" is not a host: write only the host and an optional port (proxy.golang.org, pypi.org:443)` + "\n" +
				badHosts + `:3: setup.allow_hosts[2]: "169.254.169.254" is a link-local (cloud metadata) address, which setup may never reach` + "\n" +
				"agentbot: server config " + badHosts + " is invalid\n",
		},
		{
			name:       "missing file",
			args:       []string{filepath.Join(dir, "absent.yml")},
			code:       1,
			errContain: "no such file or directory",
		},
		{
			name:       "nothing to validate",
			args:       nil,
			code:       2,
			errContain: "name a policy file or --config",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := runConfig(t, tt.env, append([]string{"config", "validate"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tt.code, errs)
			}
			if out != tt.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", out, tt.out)
			}
			if tt.errContain != "" {
				if !strings.Contains(errs, tt.errContain) {
					t.Errorf("stderr %q does not say %q", errs, tt.errContain)
				}
			} else if errs != tt.errs {
				t.Errorf("stderr:\n%s\nwant:\n%s", errs, tt.errs)
			}
		})
	}
}

func TestConfigValidateTestdata(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../app/policy/testdata/valid/*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid policies: %v", err)
	}
	if _, errs, code := runConfig(t, nil, append([]string{"config", "validate"}, files...)...); code != 0 {
		t.Errorf("exit status %d:\n%s", code, errs)
	}
	// The operator's example checks by itself, with no policy file.
	out, errs, code := runConfig(t, nil, "config", "validate", "--config", "../../deploy/server.example.yaml")
	if code != 0 || out != "../../deploy/server.example.yaml: ok\n" {
		t.Errorf("server.example.yaml: exit status %d, %q\n%s", code, out, errs)
	}
}

func TestConfigSchema(t *testing.T) {
	t.Parallel()
	out, errs, code := runConfig(t, nil, "config", "schema")
	if code != 0 {
		t.Fatalf("exit status %d: %s", code, errs)
	}
	var schema struct {
		Schema     string                     `json:"$schema"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &schema); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if schema.Schema == "" || schema.Properties["checks"] == nil || schema.Properties["limits"] == nil {
		t.Errorf("not the policy schema: %.200s", out)
	}
	if _, _, code := runConfig(t, nil, "config", "schema", "extra"); code != 2 {
		t.Errorf("an argument to config schema must be refused, exit status %d", code)
	}
}

func TestConfigUsage(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"config"}, Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errOut})
	if exitCode(err) != 2 || !strings.Contains(errOut.String(), "agentbot config validate") {
		t.Errorf("config without a command: %v, %q", err, errOut.String())
	}
	if _, errs, code := runConfig(t, nil, "config", "lint"); code != 2 || !strings.Contains(errs, `unknown config command "lint"`) {
		t.Errorf("unknown config command: %d %q", code, errs)
	}
}

// TestConfigValidateRefusesWhatTheWorkerRefuses holds config validate to
// the worker's own checks: the size cap before parsing, the sandbox's
// minimums, and YAML errors at their line.
func TestConfigValidateRefusesWhatTheWorkerRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bigText := "checks: [{name: test, run: make test}]\n#" + strings.Repeat("x", policy.MaxPolicySize) + "\n"
	big := writeConfigFile(t, dir, "big.yml", bigText)
	small := writeConfigFile(t, dir, "small.yml", "checks: [{name: test, run: make test}]\nsandbox: {memory: 12, pids: 3}\n")
	syntax := writeConfigFile(t, dir, "syntax.yml", "checks: [{name: test, run: make test}]\nlimits:\n  iterations: 3: 4\n")
	tests := []struct {
		file string
		want []string
	}{
		{big, []string{fmt.Sprintf("%s is %d bytes; a policy may have at most 262144.", big, len(bigText))}},
		{small, []string{
			small + ":2: sandbox.memory: 12 is below the least a sandbox can run with, 64MiB",
			small + ":2: sandbox.pids: 3 is below the least a sandbox can run with, 32",
		}},
		{syntax, []string{syntax + ":3: not valid YAML: mapping values are not allowed in this context"}},
	}
	for _, tt := range tests {
		_, errs, code := runConfig(t, nil, "config", "validate", tt.file)
		want := strings.Join(tt.want, "\n") + "\nagentbot: 1 of 1 files invalid\n"
		if code != 1 || errs != want {
			t.Errorf("config validate %s: exit status %d, stderr:\n%s\nwant:\n%s", filepath.Base(tt.file), code, errs, want)
		}
	}
	// The same file, as the worker reads it, fails with the same words.
	if err := policy.CheckPolicySize(big, int64(len(bigText))); err == nil || !strings.Contains(app.ErrorMessage(err), "a policy may have at most 262144") {
		t.Errorf("worker's size check: %v", err)
	}
}

func TestConfigInit(t *testing.T) {
	t.Parallel()
	goRepo := t.TempDir()
	writeConfigFile(t, goRepo, "go.mod", "module example.com/x\n")
	out, errs, code := runConfig(t, nil, "config", "init", "--repo", goRepo)
	if code != 0 {
		t.Fatalf("config init: exit status %d\n%s", code, errs)
	}
	path := filepath.Join(goRepo, ".github", "agent.yml")
	if !strings.HasPrefix(out, "wrote "+path) {
		t.Errorf("config init printed %q", out)
	}
	p, err := validatePolicyFile(path, policy.ServerConfig{SetupNetwork: true})
	if err != nil {
		t.Fatalf("the starter policy does not validate: %v", err)
	}
	if len(p.Checks) != 2 || p.Checks[0].Run != "go build ./..." || p.Checks[1].Run != "go test ./..." {
		t.Errorf("checks guessed from go.mod: %+v", p.Checks)
	}
	if _, errs, code := runConfig(t, nil, "config", "init", "--repo", goRepo); code != 1 || !strings.Contains(errs, "exists") {
		t.Errorf("config init over an existing file: exit status %d, %q", code, errs)
	}

	bare := t.TempDir()
	if _, errs, code := runConfig(t, nil, "config", "init", "--repo", bare); code != 2 || !strings.Contains(errs, "give them with --check") {
		t.Errorf("config init with nothing to guess from: exit status %d, %q", code, errs)
	}
	if _, errs, code := runConfig(t, nil, "config", "init", "--repo", bare, "--check", "./ci.sh lint", "--check", "./ci.sh test"); code != 0 {
		t.Fatalf("config init --check: exit status %d\n%s", code, errs)
	}
	p, err = validatePolicyFile(filepath.Join(bare, ".github", "agent.yml"), policy.ServerConfig{SetupNetwork: true})
	if err != nil || len(p.Checks) != 2 || p.Checks[1].Run != "./ci.sh test" {
		t.Errorf("config init --check: %+v, %v", p.Checks, err)
	}
}
