package demo

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentbot/agentbot/runner/eval"
	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// ScriptedModels are the scripts a scripted endpoint (llmtest.Endpoint)
// serves for path: a script file, as its lone model; or a suite directory
// of agentbot eval, each task's trajectory as the model named after the
// task, which "agentbot eval --model {task}" asks for.
func ScriptedModels(path string) (map[string]llmtest.Script, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	if !st.IsDir() {
		s, err := llmtest.Load(path)
		if err != nil {
			return nil, err
		}
		return map[string]llmtest.Script{"scripted": s}, nil
	}
	suite, err := eval.Load(path)
	if err != nil {
		return nil, fmt.Errorf("scripted model: %w", err)
	}
	models := map[string]llmtest.Script{}
	for _, t := range suite.Tasks {
		if t.Trajectory == "" {
			return nil, fmt.Errorf("%s: missing", filepath.Join(t.Dir, eval.TrajectoryFile))
		}
		if models[t.Name], err = llmtest.Load(t.Trajectory); err != nil {
			return nil, err
		}
	}
	return models, nil
}
