package runner_test

import (
	"fmt"

	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

// fixScript runs the checks, edits path, replacing old with fixed, runs
// the checks again and finishes.
func fixScript(path, old, fixed string) llmtest.Script {
	edit := fmt.Sprintf(`{"path":%q,"old_string":%q,"new_string":%q}`, path, old, fixed)
	return llmtest.Script{Steps: []llmtest.Step{
		{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: "{}"}}},
		{ToolCalls: []llmtest.Call{{Name: "edit_file", Arguments: llmtest.Arguments(edit)}}},
		{ToolCalls: []llmtest.Call{{Name: "run_checks", Arguments: "{}"}}},
		{ToolCalls: []llmtest.Call{{Name: "finish", Arguments: `{"title":"Fix the failing test","summary":"Fix the failing test\n\nThe function now does what its test says."}`}}},
	}}
}
