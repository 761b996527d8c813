package demo

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// Sample is the demo's task: a small Go project with a real bug and a
// failing test, the issue describing it, and the recorded fix a scripted
// model plays.
type Sample struct {
	// Files is the repository, keyed by slash-separated path.
	Files       map[string]string
	Title, Body string
	Script      llmtest.Script
}

// LoadSample reads a sample directory: repo/, issue.md (its first line is
// the title) and model.yaml.
func LoadSample(dir string) (Sample, error) {
	files, err := readTree(filepath.Join(dir, "repo"))
	if err != nil {
		return Sample{}, fmt.Errorf("demo sample: %w", err)
	}
	issue, err := os.ReadFile(filepath.Join(dir, "issue.md"))
	if err != nil {
		return Sample{}, fmt.Errorf("demo sample: %w", err)
	}
	script, err := llmtest.Load(filepath.Join(dir, "model.yaml"))
	if err != nil {
		return Sample{}, fmt.Errorf("demo sample: %w", err)
	}
	title, body, _ := strings.Cut(strings.TrimSpace(string(issue)), "\n")
	return Sample{Files: files, Title: title, Body: strings.TrimSpace(body), Script: script}, nil
}

// readTree reads every file under dir, keyed by slash-separated path.
func readTree(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}
