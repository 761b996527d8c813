package demo_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/demo"
	"github.com/agentbot/agentbot/internal/ostest"
)

// A script file is served as a lone model; a suite's trajectories as one
// model per task, named after it; a task without a trajectory, or with a
// malformed one, is named with its file.
func TestScriptedModels(t *testing.T) {
	t.Parallel()
	suite := "../runner/eval/testdata/suite"
	models, err := demo.ScriptedModels(suite)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(models)); !slices.Equal(got, []string{"errcheck", "pagination", "rounding"}) {
		t.Errorf("the suite's models are %v; want its tasks", got)
	}
	if models["rounding"].Steps[0].ToolCalls == nil {
		t.Errorf("rounding's model answers no tool call first: %+v", models["rounding"].Steps[0])
	}
	one, err := demo.ScriptedModels("../deploy/demo/model.yaml")
	if err != nil || len(one) != 1 {
		t.Fatalf("a script file: %d models, %v; want one", len(one), err)
	}

	task := map[string]string{"task.yaml": "title: t\nbody: b\nchecks: [\"true\"]\n", "repo/a.txt": "a\n"}
	for name, tc := range map[string]struct{ trajectory, want string }{
		"missing": {"", "a/trajectory.yaml: missing"},
		"bad":     {"steps:\n  - tool_calls: [{name: finish}]\n    txt: hi\n", "a/trajectory.yaml: yaml: unmarshal errors:\n  line 3: field txt not found"},
	} {
		dir := t.TempDir()
		files := maps.Clone(task)
		if tc.trajectory != "" {
			files["trajectory.yaml"] = tc.trajectory
		}
		ostest.WriteTree(t, filepath.Join(dir, "a"), files)
		if _, err := demo.ScriptedModels(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, tc.want)) {
			t.Errorf("%s trajectory: %v; want an error naming %s", name, err, tc.want)
		}
	}
}
