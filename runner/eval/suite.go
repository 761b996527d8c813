package eval

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/agentbot/agentbot/app/policy"
)

// The files of a task directory.
const (
	TaskFile       = "task.yaml"
	RepoDir        = "repo"
	HiddenDir      = "hidden"
	TrajectoryFile = "trajectory.yaml"
)

// Suite is a directory of tasks, one subdirectory each, run in name order.
type Suite struct {
	Dir   string
	Tasks []Task
}

// Task is one issue on one repository snapshot, with what decides whether
// it was solved.
type Task struct {
	Name string // the directory's name
	Dir  string
	// Title and Body are the issue the agent is given.
	Title string
	Body  string
	// Policy is the snapshot's own .github/agent.yml over the defaults, its
	// checks replaced by the task's when task.yaml lists some.
	Policy policy.Policy
	// Hidden are the commands run after the loop, in a fresh sandbox, once
	// the files of the hidden directory are laid over the tree.
	Hidden []string
	// Trajectory is the path of the scripted model's answers, or "" when
	// the task has none.
	Trajectory string
}

// Repo is the snapshot the task starts from; it is copied, never changed.
func (t Task) Repo() string { return filepath.Join(t.Dir, RepoDir) }

// HiddenFiles is the directory laid over the tree before the hidden
// commands run, or "" when the task has none.
func (t Task) HiddenFiles() string {
	dir := filepath.Join(t.Dir, HiddenDir)
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir
	}
	return ""
}

// rawTask is task.yaml as written.
type rawTask struct {
	Title  string   `yaml:"title"`
	Body   string   `yaml:"body"`
	Checks []string `yaml:"checks"`
	Hidden []string `yaml:"hidden"`
}

// Load reads the suite at dir and checks every task in it before any runs,
// so that a typo in the last task does not surface after the first ones
// have spent their budget. Errors name the file and, for YAML, the line.
func Load(dir string) (*Suite, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read suite: %w", err)
	}
	s := &Suite{Dir: dir}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		t, err := loadTask(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		s.Tasks = append(s.Tasks, t)
	}
	if len(s.Tasks) == 0 {
		return nil, fmt.Errorf("suite %s has no tasks: want one directory per task holding %s and %s/", dir, TaskFile, RepoDir)
	}
	return s, nil
}

func loadTask(dir string) (Task, error) {
	t := Task{Name: filepath.Base(dir), Dir: dir}
	file := filepath.Join(dir, TaskFile)
	data, err := os.ReadFile(file)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Task{}, fmt.Errorf("%s: missing: every task directory needs one", file)
		}
		return Task{}, err
	}
	raw, err := parseTask(data)
	if err != nil {
		return Task{}, fmt.Errorf("%s: %w", file, err)
	}
	switch {
	case strings.TrimSpace(raw.Title) == "":
		return Task{}, fmt.Errorf("%s: title is required", file)
	case strings.TrimSpace(raw.Body) == "":
		return Task{}, fmt.Errorf("%s: body, the issue text, is required", file)
	case slices.ContainsFunc(raw.Checks, isBlank):
		return Task{}, fmt.Errorf("%s: a check may not be empty", file)
	case slices.ContainsFunc(raw.Hidden, isBlank):
		return Task{}, fmt.Errorf("%s: a hidden command may not be empty", file)
	}
	t.Title, t.Body, t.Hidden = raw.Title, raw.Body, raw.Hidden
	if fi, err := os.Stat(t.Repo()); err != nil || !fi.IsDir() {
		return Task{}, fmt.Errorf("%s: missing: the repository snapshot the task starts from", t.Repo())
	}
	if t.Policy, err = LoadPolicy(t.Repo(), raw.Checks); err != nil {
		if _, ok := errors.AsType[*NoChecksError](err); ok {
			return Task{}, fmt.Errorf("task %s: %w; or list them under checks: in %s", t.Name, err, file)
		}
		return Task{}, fmt.Errorf("task %s: %w", t.Name, err)
	}
	if len(t.Hidden) > 0 && t.HiddenFiles() == "" {
		// Hidden commands over the agent's own tree would test what the
		// agent could see and change.
		return Task{}, fmt.Errorf("%s: hidden commands need the %s/ directory of tests they run", file, HiddenDir)
	}
	if _, err := os.Stat(filepath.Join(dir, TrajectoryFile)); err == nil {
		t.Trajectory = filepath.Join(dir, TrajectoryFile)
	}
	return t, nil
}

func isBlank(s string) bool { return strings.TrimSpace(s) == "" }

// parseTask decodes task.yaml strictly: unknown keys, wrong types and a
// second document are errors with their line.
func parseTask(data []byte) (rawTask, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var raw rawTask
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.EOF) {
			return rawTask{}, errors.New("empty")
		}
		return rawTask{}, yamlError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return rawTask{}, yamlError(err)
		}
		line := extra.Line
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return rawTask{}, fmt.Errorf("line %d: a second YAML document; the file must hold one", line)
	}
	return raw, nil
}

// yamlError drops yaml.v3's "yaml: " prefix and the Go type name, which
// say nothing to whoever wrote the file, and keeps every problem's line.
func yamlError(err error) error {
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		return errors.New(strings.ReplaceAll(strings.Join(te.Errors, "; "), " in type eval.rawTask", ""))
	}
	return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
}
