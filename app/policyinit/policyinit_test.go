package policyinit_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/app/policyinit"
)

func TestInfer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tree      string
		image     string
		setup     []string
		network   bool
		checks    []string
		detected  []string // the toolchains, the policy's first
		inComment []string // text the policy holds besides
	}{
		{tree: "gomod", image: "agentbot-sandbox:dev", setup: []string{"go mod download"}, network: true,
			checks: []string{"go build ./...", "go test ./..."}, detected: []string{"go"}, inComment: []string{"go.sum: 2 modules"}},
		{tree: "gobare", image: "agentbot-sandbox:dev",
			checks: []string{"go build ./...", "go test ./..."}, detected: []string{"go"}},
		{tree: "pysetup", image: "agentbot-sandbox:python", setup: []string{"python3 -m pip install -e ."}, network: true,
			checks: []string{"python3 -m pytest"}, detected: []string{"python"}},
		{tree: "pyproject", image: "agentbot-sandbox:python", setup: []string{"python3 -m pip install -e '.[test]'"}, network: true,
			checks: []string{"python3 -m pytest -q tests --maxfail=1", "python3 test.py --fast"}, detected: []string{"python"},
			inComment: []string{"from .github/workflows/test.yml"}},
		{tree: "tox", image: "agentbot-sandbox:python", setup: []string{"python3 -m pip install -e ."}, network: true,
			checks: []string{"python3 -m pytest", "python3 -m unittest discover"}, detected: []string{"python"}},
		{tree: "nox", image: "agentbot-sandbox:python", setup: []string{"python3 -m pip install -e '.[test]'"}, network: true,
			checks: []string{"python3 -m pytest -x tests"}, detected: []string{"python"}, inComment: []string{"from noxfile.py"}},
		{tree: "npm", image: "agentbot-sandbox:node", setup: []string{"npm ci"}, network: true,
			checks: []string{"npm test"}, detected: []string{"node"}},
		{tree: "yarn", image: "agentbot-sandbox:node", setup: []string{"npx --yes yarn@1 install --frozen-lockfile"}, network: true,
			checks: []string{"npm run build", "npm test"}, detected: []string{"node"}},
		{tree: "pnpm", image: "agentbot-sandbox:node", setup: []string{"npx --yes pnpm@8.15.4 install --frozen-lockfile"}, network: true,
			checks: []string{"npm run test:unit -- --run"}, detected: []string{"node"}, inComment: []string{"from .github/workflows/ci.yaml"}},
		{tree: "multi", image: "agentbot-sandbox:dev",
			checks: []string{"go vet ./...", "go test -race ./..."}, detected: []string{"go", "python", "node"},
			inComment: []string{"# node needs the image agentbot-sandbox:node", "#   setup: npm ci", "#   check: npm test",
				"#   setup: python3 -m pip install -r requirements-dev.txt"}},
		{tree: "makefile", image: "agentbot-sandbox:dev",
			checks: []string{"make build", "make test"}, detected: []string{"go"}},
	}
	for _, tt := range tests {
		t.Run(tt.tree, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join("testdata", tt.tree)
			p, err := policyinit.Infer(os.DirFS(dir))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tc := range p.Toolchains {
				names = append(names, tc.Name)
			}
			if !slices.Equal(names, tt.detected) {
				t.Errorf("detected %v, want %v", names, tt.detected)
			}
			text := p.YAML()
			raw, err := policy.ParsePolicy(tt.tree+"/.github/agent.yml", []byte(text))
			if err != nil {
				t.Fatalf("the policy does not parse: %s\n%s", app.ErrorMessage(err), text)
			}
			pol, err := policy.BuildPolicy(policy.ServerConfig{SetupNetwork: true, Images: []string{"agentbot-sandbox:*"}}, raw)
			if err != nil {
				t.Fatalf("the policy does not validate: %s\n%s", app.ErrorMessage(err), text)
			}
			var runs []string
			for _, c := range pol.Checks {
				runs = append(runs, c.Run)
			}
			if pol.Sandbox.Image != tt.image || !slices.Equal(pol.Setup.Run, tt.setup) || pol.Setup.Network != tt.network || !slices.Equal(runs, tt.checks) {
				t.Errorf("policy: image %q, setup %q (network %v), checks %q; want %q, %q (%v), %q\n%s",
					pol.Sandbox.Image, pol.Setup.Run, pol.Setup.Network, runs, tt.image, tt.setup, tt.network, tt.checks, text)
			}
			for _, want := range tt.inComment {
				if !strings.Contains(text, want) {
					t.Errorf("the policy lacks %q:\n%s", want, text)
				}
			}
		})
	}
}

func TestInferNothing(t *testing.T) {
	t.Parallel()
	_, err := policyinit.Infer(os.DirFS(filepath.Join("testdata", "none")))
	if err == nil || !strings.Contains(err.Error(), "setup.py") {
		t.Errorf("a tree of no known toolchain: %v", err)
	}
}
