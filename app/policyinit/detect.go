package policyinit

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"strings"
)

// detectGo finds a Go module: go.mod, and in go.sum the modules setup
// downloads, since the sandbox's GOPROXY=off fetches nothing later.
func detectGo(fsys fs.FS, ci []command) (Toolchain, bool) {
	if !exists(fsys, "go.mod") {
		return Toolchain{}, false
	}
	t := Toolchain{Name: "go", Evidence: []string{"go.mod"}}
	if n := sumModules(readText(fsys, "go.sum")); n > 0 {
		t.Evidence = append(t.Evidence, fmt.Sprintf("go.sum: %d modules", n))
		t.Setup, t.Network = []string{"go mod download"}, true
	}
	t.Checks = checksFrom(ci, "go",
		Check{Run: "go build ./...", Source: "default"}, Check{Run: "go test ./...", Source: "default"})
	return t, true
}

// sumModules is how many modules go.sum lists.
func sumModules(text string) int {
	mods := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			mods[f[0]] = true
		}
	}
	return len(mods)
}

var (
	// A pyproject.toml that builds a package, rather than only
	// configuring tools.
	pyPackage = regexp.MustCompile(`(?m)^\[(project|build-system|tool\.poetry)\]`)
	// The extra that installs the test dependencies: in pyproject.toml's
	// [project.optional-dependencies] or setup.py's extras_require.
	pyExtraSection = regexp.MustCompile(`(?ms)^\[project\.optional-dependencies\]\s*\n(.*?)(?:^\[|\z)`)
	pyExtraKey     = regexp.MustCompile(`(?m)^\s*"?(test|tests|testing|dev)"?\s*=`)
	setupExtra     = regexp.MustCompile(`extras_require\s*=\s*\{[^}]*['"](test|tests|testing|dev)['"]`)
)

// detectPython finds a Python project: its package installed editable
// (with its test extra), and its requirements files.
func detectPython(fsys fs.FS, ci []command) (Toolchain, bool) {
	t := Toolchain{Name: "python"}
	for _, f := range []string{"pyproject.toml", "setup.py", "setup.cfg", "poetry.lock", "uv.lock"} {
		if exists(fsys, f) {
			t.Evidence = append(t.Evidence, f)
		}
	}
	reqs := glob(fsys, "requirements*.txt")
	t.Evidence = append(t.Evidence, reqs...)
	if len(t.Evidence) == 0 {
		return Toolchain{}, false
	}
	for _, r := range reqs {
		t.Setup = append(t.Setup, "python3 -m pip install -r "+r)
	}
	pyproject := readText(fsys, "pyproject.toml")
	if exists(fsys, "setup.py") || exists(fsys, "setup.cfg") || pyPackage.MatchString(pyproject) {
		target := "."
		if m := pyExtraSection.FindStringSubmatch(pyproject); m != nil && pyExtraKey.MatchString(m[1]) {
			target = "'.[" + pyExtraKey.FindStringSubmatch(m[1])[1] + "]'"
		} else if m := setupExtra.FindStringSubmatch(readText(fsys, "setup.py")); m != nil {
			target = "'.[" + m[1] + "]'"
		}
		t.Setup = append(t.Setup, "python3 -m pip install -e "+target)
	}
	if exists(fsys, "poetry.lock") || exists(fsys, "uv.lock") {
		t.Notes = append(t.Notes, "pip installs the versions pyproject.toml allows, not those of the lock file: the image has neither poetry nor uv")
	}
	t.Network = len(t.Setup) > 0
	t.Checks = checksFrom(ci, "python", Check{Run: "python3 -m pytest", Source: "default"})
	return t, true
}

// detectNode finds a Node package and installs its dependencies with the
// package manager its lock file is for: npm is in the image, and yarn
// and pnpm are fetched by npx during setup, into the kept $HOME.
func detectNode(fsys fs.FS, ci []command) (Toolchain, bool) {
	text := readText(fsys, "package.json")
	if text == "" {
		return Toolchain{}, false
	}
	var pkg struct {
		Deps           map[string]string `json:"dependencies"`
		DevDeps        map[string]string `json:"devDependencies"`
		PackageManager string            `json:"packageManager"`
	}
	if err := json.Unmarshal([]byte(text), &pkg); err != nil {
		return Toolchain{}, false
	}
	t := Toolchain{Name: "node", Evidence: []string{"package.json"}}
	install := "npm install"
	switch {
	case exists(fsys, "package-lock.json"):
		t.Evidence, install = append(t.Evidence, "package-lock.json"), "npm ci"
	case exists(fsys, "npm-shrinkwrap.json"):
		t.Evidence, install = append(t.Evidence, "npm-shrinkwrap.json"), "npm ci"
	case exists(fsys, "yarn.lock"):
		t.Evidence, install = append(t.Evidence, "yarn.lock"), "npx --yes "+pinned(pkg.PackageManager, "yarn", "yarn@1")+" install --frozen-lockfile"
	case exists(fsys, "pnpm-lock.yaml"):
		v := "pnpm@9"
		if !strings.Contains(readText(fsys, "pnpm-lock.yaml"), "lockfileVersion: '9") {
			v = "pnpm@8"
		}
		t.Evidence, install = append(t.Evidence, "pnpm-lock.yaml"), "npx --yes "+pinned(pkg.PackageManager, "pnpm", v)+" install --frozen-lockfile"
	}
	if len(pkg.Deps)+len(pkg.DevDeps) > 0 {
		t.Setup, t.Network = []string{install}, true
	}
	t.Checks = checksFrom(ci, "node", Check{Run: "npm test", Source: "default"})
	return t, true
}

// pinned is the package manager package.json's packageManager field names
// ("pnpm@8.15.4", without its hash), when it is tool's, else fallback.
func pinned(field, tool, fallback string) string {
	field, _, _ = strings.Cut(field, "+")
	if strings.HasPrefix(field, tool+"@") {
		return field
	}
	return fallback
}
