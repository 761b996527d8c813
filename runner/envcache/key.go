package envcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// LockFiles are the files whose content keys an environment in every
// repository, at any depth: what package managers resolve dependencies
// from. A policy adds its own with setup.cache_key_files.
var LockFiles = []string{
	"**/go.sum", "**/package-lock.json", "**/npm-shrinkwrap.json", "**/yarn.lock", "**/pnpm-lock.yaml",
	"**/requirements*.txt", "**/poetry.lock", "**/uv.lock", "**/Pipfile.lock", "**/Cargo.lock",
}

// maxKeyFiles bounds how many files a key hashes, so that a pattern such
// as "**" cannot make every task read the whole tree.
const maxKeyFiles = 1000

// KeyInput is what an environment depends on.
type KeyInput struct {
	ImageID string   // the image's id, not its tag, which can move
	Setup   []string // the setup commands, in order
	Network bool     // whether setup ran with network
	// Patterns are the policy's extra lock-file globs, relative to the
	// tree, on top of LockFiles.
	Patterns []string
}

// Key hashes in and the lock files of tree into an environment's key (16
// hex digits), and returns the lock files it read, slash-separated. Trees
// that setup itself fills (TreeDirs) and .git are not searched.
func Key(in KeyInput, tree fs.FS) (key string, files []string, err error) {
	patterns := append(slices.Clone(LockFiles), in.Patterns...)
	for _, p := range patterns {
		if !doublestar.ValidatePattern(p) {
			return "", nil, fmt.Errorf("lock-file pattern %q is not a valid glob", p)
		}
	}
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
		for _, pat := range patterns {
			if doublestar.MatchUnvalidated(pat, p) {
				files = append(files, p)
				break
			}
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
	field("agentbot-env-v1")
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
