package envcache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentbot/agentbot/runner/sandbox"
)

// LockFiles are the files whose content keys an environment in every
// repository, at any depth: what package managers resolve dependencies
// from. A policy adds its own with setup.cache_key_files.
var LockFiles = []string{
	"**/go.sum", "**/package-lock.json", "**/npm-shrinkwrap.json", "**/yarn.lock", "**/pnpm-lock.yaml",
	"**/requirements*.txt", "**/poetry.lock", "**/uv.lock", "**/Pipfile.lock", "**/Cargo.lock",
}

// SetupFiles are the files, at any depth, that the usual setup commands
// run or read besides the lock files (make, npm, go, pip): a changed
// Makefile or install hook is never served an environment its old version
// built. A file a setup command names (./scripts/install.sh) keys it too.
var SetupFiles = []string{
	"**/Makefile", "**/package.json", "**/go.mod", "**/pyproject.toml", "**/setup.py", "**/setup.cfg",
}

// maxKeyFiles bounds how many files a key hashes, so that a pattern such
// as "**" cannot make every task read the whole tree.
const maxKeyFiles = 1000

// Owner is whom an environment belongs to: one repository on GitHub, by
// its numeric id (a name can be transferred or reused) and, when known,
// the installation serving it; or one checkout of this machine. An
// environment serves its owner alone: another repository that copies its
// setup and lock files gets a key of its own, and Acquire refuses an
// entry recorded for someone else.
type Owner struct {
	Installation int64 `json:"installation,omitempty"`
	Repository   int64 `json:"repository,omitempty"`
	// Local is a local checkout's absolute path (agentbot run), or the
	// name of another local use (agentbot eval's seed of $HOME); never
	// set with Repository.
	Local string `json:"local,omitempty"`
}

// GitHubOwner is the owner of repository id, served by installation.
func GitHubOwner(installation, repository int64) Owner {
	return Owner{Installation: installation, Repository: repository}
}

// LocalOwner is the owner of the checkout at dir, by its absolute path, so
// that a local run never shares an environment with a worker's repository
// nor with another checkout.
func LocalOwner(dir string) (Owner, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Owner{}, fmt.Errorf("the checkout's path: %w", err)
	}
	return Owner{Local: abs}, nil
}

// String is how listings show the owner: "github:repo=ID,inst=ID" or
// "local:PATH".
func (o Owner) String() string {
	switch {
	case o.Local != "":
		return "local:" + o.Local
	case o.Installation != 0:
		return fmt.Sprintf("github:repo=%d,inst=%d", o.Repository, o.Installation)
	case o.Repository != 0:
		return fmt.Sprintf("github:repo=%d", o.Repository)
	}
	return "none"
}

// check refuses an owner that names nobody, or two kinds at once.
func (o Owner) check() error {
	switch {
	case o.Local != "" && (o.Repository != 0 || o.Installation != 0):
		return errors.New("an environment's owner is a repository or a local checkout, not both")
	case o.Local == "" && o.Repository <= 0:
		return errors.New("an environment needs an owner: a repository's id or a local checkout")
	}
	return nil
}

// KeyInput is what an environment depends on.
type KeyInput struct {
	Owner   Owner
	ImageID string   // the image's id, not its tag, which can move
	Setup   []string // the setup commands, in order
	Network bool     // whether setup ran with network
	// Patterns are the policy's extra lock-file globs, relative to the
	// tree, on top of LockFiles.
	Patterns []string
}

// Key hashes in, the lock files and SetupFiles of tree, and the files of
// tree its setup commands name, into an environment's key (16 hex
// digits), and returns the files it read, slash-separated. Trees that
// setup itself fills (TreeDirs) and .git are not searched.
func Key(in KeyInput, tree fs.FS) (key string, files []string, err error) {
	if err := in.Owner.check(); err != nil {
		return "", nil, err
	}
	patterns := append(slices.Concat(LockFiles, SetupFiles), in.Patterns...)
	for _, p := range patterns {
		if !doublestar.ValidatePattern(p) {
			return "", nil, fmt.Errorf("lock-file pattern %q is not a valid glob", p)
		}
	}
	named := namedFiles(in.Setup)
	err = fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (d.Name() == ".git" || slices.Contains(TreeDirs, d.Name())) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // a symlink could point out of the tree
		}
		if named[p] || slices.ContainsFunc(patterns, func(pat string) bool { return doublestar.MatchUnvalidated(pat, p) }) {
			files = append(files, p)
		}
		if len(files) > maxKeyFiles {
			return fmt.Errorf("more than %d lock files match; narrow setup.cache_key_files", maxKeyFiles)
		}
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("find lock files: %w", err)
	}
	h := sha256.New()
	// Each field is length-prefixed, so that no two inputs hash alike.
	field := func(s string) { fmt.Fprintf(h, "%d:%s\n", len(s), s) }
	field("agentbot-env-v2")
	field(in.Owner.String())
	field(in.ImageID)
	field(fmt.Sprint(in.Network))
	field(fmt.Sprint(len(in.Setup)))
	for _, s := range in.Setup {
		field(s)
	}
	for _, f := range files { // WalkDir's order is lexical, so stable
		sum, err := hashFile(tree, f)
		if err != nil {
			return "", nil, err
		}
		field(f)
		field(sum)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], files, nil
}

// namedFiles are the words of setup lines that may name a file of the
// tree, cleaned and relative to it: "./scripts/install.sh", "bash
// scripts/x.sh", "make -f build/Makefile". The walk hashes those it finds
// as regular files; a word naming nothing costs nothing.
func namedFiles(setup []string) map[string]bool {
	named := map[string]bool{}
	for _, line := range setup {
		words := strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\n'\"`;&|()<>=$", r) })
		for _, w := range words {
			w = strings.TrimPrefix(w, sandbox.WorkDir+"/")
			if w = path.Clean(w); fs.ValidPath(w) && w != "." {
				named[w] = true
			}
		}
	}
	return named
}

func hashFile(tree fs.FS, name string) (string, error) {
	f, err := tree.Open(name)
	if err != nil {
		return "", fmt.Errorf("read lock file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read lock file %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// validKey reports whether key is one Key makes, so that a key from the
// command line never names a path.
func validKey(key string) bool {
	return len(key) == 16 && strings.Trim(key, "0123456789abcdef") == ""
}
