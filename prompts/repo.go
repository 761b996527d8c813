package prompts

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Caps on what the repository contributes to the prompt.
const (
	guidanceBytes = 8 << 10 // per instructions file
	readmeBytes   = 3 << 10
	readmeLines   = 60
	treeEntries   = 200
)

// guidanceFiles are the conventional places of a repository's instructions
// for coding agents, in the order they are shown.
var guidanceFiles = []string{"AGENTS.md", ".github/copilot-instructions.md", "CLAUDE.md"}

// Doc is a file quoted in the prompt.
type Doc struct {
	Path string
	Text string
	Cut  bool // the file was longer than what is shown
}

// Repo is what the model is told about the repository before it reads any
// file: its instructions for agents, its top-level tree and its README.
type Repo struct {
	Guidance []Doc
	Tree     []string // top-level entries, directories with a trailing slash
	Readme   *Doc
}

// LoadRepo gathers a Repo from the work tree (an os.Root's FS, so that a
// symlink cannot pull in a file from outside it).
func LoadRepo(fsys fs.FS) (Repo, error) {
	var r Repo
	for _, p := range guidanceFiles {
		d, err := readDoc(fsys, p, guidanceBytes, 0)
		if err != nil {
			return Repo{}, err
		}
		if d != nil {
			r.Guidance = append(r.Guidance, *d)
		}
	}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return Repo{}, fmt.Errorf("read the top-level tree: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == ".git" {
			continue
		}
		if len(r.Tree) == treeEntries {
			r.Tree = append(r.Tree, fmt.Sprintf("... and %d more", len(entries)-treeEntries))
			break
		}
		if e.IsDir() {
			name += "/"
		}
		r.Tree = append(r.Tree, name)
		if r.Readme == nil && !e.IsDir() && strings.HasPrefix(strings.ToUpper(name), "README") {
			if r.Readme, err = readDoc(fsys, name, readmeBytes, readmeLines); err != nil {
				return Repo{}, err
			}
		}
	}
	return r, nil
}

// readDoc reads the head of a file; nil when there is none.
func readDoc(fsys fs.FS, p string, maxBytes, maxLines int) (*Doc, error) {
	b, err := fs.ReadFile(fsys, p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	text, cut := string(b), false
	if len(text) > maxBytes {
		text, cut = text[:maxBytes], true
	}
	if maxLines > 0 {
		if lines := strings.SplitAfter(text, "\n"); len(lines) > maxLines {
			text, cut = strings.Join(lines[:maxLines], ""), true
		}
	}
	return &Doc{Path: p, Text: strings.TrimRight(text, "\n"), Cut: cut}, nil
}
