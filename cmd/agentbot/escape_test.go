package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
)

// hostile holds what a hijacked model or a commenter could write: a
// colour change, a window title change (OSC, ended by BEL), a screen
// clear, a C1 CSI, a bidirectional override and a byte that is no UTF-8.
const hostile = "src/\x1b[31mred\x1b[0m\x1b]0;pwned\x07\x1b[2J\u009b6n\u202eexe.go\xff"

// assertInert fails when out holds any byte of an escape sequence or a
// character printable is there to escape.
func assertInert(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", "\xff"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s prints %q raw:\n%q", what, bad, out)
		}
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"stats.go":                    "stats.go",
		"naïve/日本.go":                 "naïve/日本.go",
		"\x1b[31mred\x1b[0m":          `\x1b[31mred\x1b[0m`,
		"\x1b]0;title\x07":            `\x1b]0;title\x07`,
		"\u009b2J":                    `\x9b2J`,
		"a\u202eb\u2066c":             `a\u202eb\u2066c`,
		"one\ntwo\tthree\rfour\u2028": `one\ntwo\tthree\rfour\u2028`,
		"bad\xffbyte\x7f":             `bad\xffbyte\x7f`,
		"":                            "",
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q; want %q", in, got, want)
		}
	}
	if got := printableLines("line \x1b[1mone\nline two\n"); got != "line \\x1b[1mone\nline two\n" {
		t.Errorf("printableLines kept or lost the wrong things: %q", got)
	}
}

func TestJSONEscaperKeepsTheValue(t *testing.T) {
	t.Parallel()
	v := map[string]string{"path": hostile, "text": "a\nb\u2029c\x7f"}
	var out bytes.Buffer
	if err := printJSON(&out, v); err != nil {
		t.Fatal(err)
	}
	assertInert(t, "printJSON", out.String())
	if strings.ContainsAny(out.String(), "\u2029\x7f") {
		t.Errorf("printJSON prints a separator or DEL raw: %q", out.String())
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatalf("escaped JSON does not parse: %v\n%s", err, out.String())
	}
	// encoding/json makes the bad byte U+FFFD; everything else comes back.
	if want := strings.ReplaceAll(hostile, "\xff", "\ufffd"); back["path"] != want || back["text"] != v["text"] {
		t.Errorf("decoded %q; want %q", back, v)
	}
}

// TestCommandsPrintNoEscapeSequences: tasks, trace and audit print what a
// hijacked model or a commenter chose, escaped, in every format.
func TestCommandsPrintNoEscapeSequences(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rs, rdb := testRedis(t)
	task := app.Task{ID: "t1", Delivery: "d-\x1b[2J", Event: "issue_comment", InstallationID: 1, Repo: "acme/stats",
		Number: 1, Verb: app.VerbFix, Requester: "ada" + hostile, Instructions: "fix " + hostile + "\nsecond line",
		ReviewComment: &app.ReviewComment{ID: 1, Path: hostile, Line: 3}, ReceivedAt: time.Now().UTC()}
	if _, err := queue.NewClient(rdb).Enqueue(ctx, task); err != nil {
		t.Fatal(err)
	}
	if err := queue.NewStore(rdb).SetState(ctx, "t1", app.StateRunning, "step 2: write_file "+hostile); err != nil {
		t.Fatal(err)
	}
	for _, e := range []app.TraceEvent{
		{Kind: app.TraceToolCall, Step: 1, Name: "write_file", Args: `{"path":"` + hostile + `"}`, Outcome: "blocked", Detail: hostile},
		{Kind: app.TraceRefusal, Step: 1, Name: hostile, Outcome: hostile},
	} {
		if err := queue.NewTraces(rdb, time.Hour).Append(ctx, "t1", e); err != nil {
			t.Fatal(err)
		}
	}
	audit, err := queue.NewAudit(rdb, queue.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	entry := app.AuditEntryFor(app.AuditBlocked, &task, "write_file "+hostile)
	entry.Actor = "ada\x1b[8m"
	if err := audit.Append(ctx, entry); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{
		{"tasks", "list"}, {"tasks", "list", "--json"}, {"tasks", "show", "t1"}, {"tasks", "show", "t1", "--json"},
		{"trace", "t1"}, {"trace", "t1", "--json"}, {"trace", "t1", "--markdown"},
		{"audit"}, {"audit", "--json"},
	} {
		env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
		if err := run(ctx, args, env); err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if !strings.Contains(out.String(), "exe.go") {
			t.Errorf("%q does not print the hostile text at all:\n%s", args, out)
		}
		assertInert(t, strings.Join(args, " "), out.String())
	}
}
