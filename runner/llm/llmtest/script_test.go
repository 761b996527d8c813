package llmtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/runner/llm/llmtest"
)

func TestLoad(t *testing.T) {
	s, err := llmtest.Load("testdata/fix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 4 || len(s.Rules) != 1 {
		t.Fatalf("loaded %d steps and %d rules, want 4 and 1", len(s.Steps), len(s.Rules))
	}
	if got := s.Steps[0].ToolCalls[0].Arguments; got != `{"lines":[1,40],"path":"calc_test.go"}` {
		t.Errorf("mapping arguments = %s, want them encoded as JSON", got)
	}
	if got := s.Steps[1].ToolCalls[0]; got.ID != "call_edit" || got.Arguments != `{"path": "calc.go", ` {
		t.Errorf("string arguments = %+v, want the text verbatim", got)
	}
	if st := s.Steps[2]; st.Status != 429 || st.RetryAfter != 2*time.Second || st.Error != "Rate limit reached" {
		t.Errorf("fault step = %+v", st)
	}
	if st := s.Steps[3]; st.Delay != 10*time.Millisecond || st.FinishReason != "stop" || st.Usage == nil || st.Usage.PromptTokens != 5 {
		t.Errorf("last step = %+v", st)
	}
	if s.Usage != (llmtest.Usage{PromptTokens: 1200, CachedTokens: 1000, CompletionTokens: 80}) {
		t.Errorf("usage = %+v", s.Usage)
	}
	if r := s.Rules[0]; r.Regexp != `--- FAIL: Test\w+` || r.Times != 1 || r.Step.ToolCalls[0].Arguments != `{}` {
		t.Errorf("rule = %+v", r)
	}

	j, err := llmtest.Load("testdata/fix.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Steps) != 3 || j.Steps[0].ToolCalls[0].Arguments != `{"path":"calc.go"}` || j.Steps[1].Body == "" || j.Rules[0].Contains != "FAIL" {
		t.Errorf("JSON script = %+v", j)
	}
}

func TestParseRefusesBadScripts(t *testing.T) {
	tests := []struct {
		name, script, wantErr string
	}{
		{"empty", "", "empty script"},
		{"unknown key", "steps: []\nstpes: []\n", "line 2: field stpes not found"},
		{"wrong type", "steps:\n  - text: [a]\n", "line 2"},
		{"bad duration", "steps:\n  - status: 429\n    retry_after: soon\n", "line 3"},
		{"empty step", "steps:\n  - {}\n", "step 1: set exactly one of"},
		{"text and status", "steps:\n  - {text: hi, status: 500}\n", "step 1: set exactly one of"},
		{"status not an error", "steps:\n  - {status: 200}\n", "step 1: status 200 is not an HTTP error status"},
		{"retry_after without status", "steps:\n  - {text: hi, retry_after: 1s}\n", "step 1: retry_after needs a status"},
		{"tool call without name", "steps:\n  - tool_calls: [{arguments: {}}]\n", "step 1: tool call 1 has no name"},
		{"rule without match", "rules:\n  - {text: hi}\n", "rule 1: set exactly one of contains and regexp"},
		{"rule with both matches", "rules:\n  - {contains: a, regexp: b, text: hi}\n", "rule 1: set exactly one of contains and regexp"},
		{"bad regexp", "rules:\n  - {regexp: '(', text: hi}\n", "rule 1: regexp"},
		{"negative times", "rules:\n  - {contains: a, times: -1, text: hi}\n", "rule 1: times -1 is negative"},
		{"rule answers nothing", "rules:\n  - {contains: a}\n", "rule 1: set exactly one of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := llmtest.Parse([]byte(tt.script))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("steps:\n  - {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := llmtest.Load(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("Load = %v, want an error naming %s", err, path)
	}
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	if _, err := llmtest.Load(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Load = %v, want an error naming %s", err, missing)
	}
}

// Start checks scripts built in Go as Parse checks files.
func TestStartRefusesBadScripts(t *testing.T) {
	if _, err := llmtest.Start(llmtest.Script{Rules: []llmtest.Rule{{Regexp: "(", Step: llmtest.Step{Text: "x"}}}}); err == nil {
		t.Error("Start accepted a rule with a bad regexp")
	}
	if _, err := llmtest.Start(llmtest.Script{Steps: []llmtest.Step{{}}}); err == nil {
		t.Error("Start accepted an empty step")
	}
}

// Whatever Parse accepts, Start serves.
func FuzzParse(f *testing.F) {
	for _, path := range []string{"testdata/fix.yaml", "testdata/fix.json"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("steps:\n  - {status: 429, retry_after: 1s}\nrules:\n  - {regexp: 'a+', times: 2, text: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := llmtest.Parse(data)
		if err != nil {
			return
		}
		srv, err := llmtest.Start(s)
		if err != nil {
			t.Fatalf("Parse accepted a script Start refuses: %v", err)
		}
		srv.Close()
	})
}
