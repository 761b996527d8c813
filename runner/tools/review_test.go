package tools_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/runner/tools"
)

func TestReviewSetReportsFindings(t *testing.T) {
	dir := tree(t, map[string]string{"main.go": "package main\n\nfunc main() {}\n"})
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s, err := tools.New(tools.Config{Root: root, Policy: testPolicy(), Review: true})
	if err != nil {
		t.Fatalf("a review set needs no runner: %v", err)
	}
	var names []string
	for _, d := range s.Defs() {
		names = append(names, d.Name)
	}
	if want := []string{"list_files", "read_file", "search", "find_symbol", "report_finding", "finish_review"}; !slices.Equal(names, want) {
		t.Errorf("tools offered %v; want %v", names, want)
	}
	ctx := context.Background()
	var calls []tools.Call
	results := map[string]string{}
	call := func(args string) tools.Result {
		id := string(rune('a' + len(calls)))
		calls = append(calls, tools.Call{ID: id, Name: "report_finding", Arguments: args})
		r := s.Call(ctx, "report_finding", args)
		results[id] = r.Output
		return r
	}
	for _, bad := range []struct{ args, want string }{
		{`{"severity":"critical","path":"main.go","line":3,"title":"t","body":"b"}`, "severity must be high, medium or low"},
		{`{"severity":"high","path":"main.go","line":9,"title":"t","body":"b"}`, "main.go has 3 lines; line 9 is past the end"},
		{`{"severity":"high","path":"gone.go","line":1,"title":"t","body":"b"}`, "gone.go does not exist"},
		{`{"severity":"high","path":"main.go","line":3,"title":"t","body":"b","test":{"path":"main.go","content":"x"}}`, "is not a test file"},
		{`{"severity":"high","path":"main.go","line":3,"title":"t","body":"b","test":{"path":"../x_test.go","content":"x"}}`, "test.path"},
	} {
		if r := call(bad.args); r.Outcome == tools.OK || !strings.Contains(r.Output, bad.want) {
			t.Errorf("report_finding %s: %s %q; want a refusal saying %q", bad.args, r.Outcome, r.Output, bad.want)
		}
	}
	good := `{"severity":"High","path":"main.go","line":3,"title":"main does nothing","body":"b","test":{"path":"main_test.go","content":"package main\n"}}`
	if r := call(good); r.Outcome != tools.OK {
		t.Fatalf("report_finding: %s %q", r.Outcome, r.Output)
	}
	got := tools.FindingsOf(calls, func(id string) string { return results[id] })
	if len(got) != 1 || got[0].Severity != app.SeverityHigh || got[0].Line != 3 || got[0].Test == nil || got[0].Test.Path != "main_test.go" {
		t.Errorf("findings %+v; want the one accepted", got)
	}
	if r := s.Call(ctx, "finish_review", `{"summary":"One problem."}`); r.Outcome != tools.OK || !r.Done || r.Summary != "One problem." {
		t.Errorf("finish_review: %s done=%v %q", r.Outcome, r.Done, r.Summary)
	}
	if _, err := os.Stat(dir + "/main_test.go"); err == nil {
		t.Error("a finding's test was written to the tree")
	}
}
