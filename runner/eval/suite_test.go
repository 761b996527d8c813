package eval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadShippedSuite(t *testing.T) {
	t.Parallel()
	s, err := Load("testdata/suite")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, task := range s.Tasks {
		names = append(names, task.Name)
		if task.Trajectory == "" || task.HiddenFiles() == "" || len(task.Hidden) == 0 || task.Policy.Checks[0].Run != "go test ./..." {
			t.Errorf("task %s = %+v: want a trajectory, hidden tests and go test as its check", task.Name, task)
		}
		// The hidden tests must not be in the snapshot the agent sees.
		hidden, _ := os.ReadDir(task.HiddenFiles())
		for _, h := range hidden {
			if _, err := os.Stat(filepath.Join(task.Repo(), h.Name())); err == nil {
				t.Errorf("task %s: hidden %s is in the snapshot too", task.Name, h.Name())
			}
		}
	}
	if got := strings.Join(names, " "); got != "errcheck pagination rounding" {
		t.Errorf("tasks = %s, want them in name order", got)
	}
}

// writeTask writes a task directory under suite: files maps a path inside
// the task directory to its content.
func writeTask(t *testing.T, suite, name string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(suite, name, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadRefusesMalformedSuites(t *testing.T) {
	t.Parallel()
	const good = "title: t\nbody: b\nchecks: [\"true\"]\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string // with the suite directory for $S
	}{
		{"missing task file", map[string]string{"repo/a.txt": "a"}, "$S/a/task.yaml: missing"},
		{"unknown key", map[string]string{"task.yaml": good + "hiden: [x]\n", "repo/a.txt": "a"}, "$S/a/task.yaml: line 4: field hiden not found"},
		{"wrong type", map[string]string{"task.yaml": "title: t\nbody: {a: b}\nchecks: [x]\n", "repo/a.txt": "a"}, "$S/a/task.yaml: line 2: cannot unmarshal"},
		{"not YAML", map[string]string{"task.yaml": "title: [\n", "repo/a.txt": "a"}, "$S/a/task.yaml: "},
		{"second document", map[string]string{"task.yaml": good + "---\ntitle: u\n", "repo/a.txt": "a"}, "$S/a/task.yaml: line 5: a second YAML document"},
		{"empty", map[string]string{"task.yaml": "", "repo/a.txt": "a"}, "$S/a/task.yaml: empty"},
		{"no title", map[string]string{"task.yaml": "body: b\nchecks: [x]\n", "repo/a.txt": "a"}, "$S/a/task.yaml: title is required"},
		{"no body", map[string]string{"task.yaml": "title: t\nchecks: [x]\n", "repo/a.txt": "a"}, "$S/a/task.yaml: body, the issue text, is required"},
		{"empty check", map[string]string{"task.yaml": "title: t\nbody: b\nchecks: [\" \"]\n", "repo/a.txt": "a"}, "$S/a/task.yaml: a check may not be empty"},
		{"no snapshot", map[string]string{"task.yaml": good}, "$S/a/repo: missing"},
		{"no checks", map[string]string{"task.yaml": "title: t\nbody: b\n", "repo/a.txt": "a"}, "; or list them under checks: in $S/a/task.yaml"},
		{"bad policy", map[string]string{"task.yaml": good, "repo/.github/agent.yml": "version: 1\nlimits: {iteratons: 3}\n"}, "$S/a/repo/.github/agent.yml:2"},
		{"hidden without tests", map[string]string{"task.yaml": good + "hidden: [\"go test ./...\"]\n", "repo/a.txt": "a"}, "$S/a/task.yaml: hidden commands need the hidden/ directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			suite := t.TempDir()
			writeTask(t, suite, "a", tt.files)
			_, err := Load(suite)
			want := strings.ReplaceAll(tt.want, "$S", suite)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Load = %v, want an error containing %q", err, want)
			}
		})
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "has no tasks") {
		t.Errorf("Load(empty dir) = %v, want an error saying it has no tasks", err)
	}
}
