package main

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
)

func TestAuditCommand(t *testing.T) {
	t.Parallel()
	rs, rdb := testRedis(t)
	audit, err := queue.NewAudit(rdb, queue.AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []app.AuditEntry{
		{Kind: app.AuditCommand, Installation: 1, Repo: "octo/hello", Number: 4, Actor: "alice", Task: "t1", Detail: "/agent fix the\nflaky test"},
		{Kind: app.AuditAdmission, Installation: 1, Repo: "octo/hello", Number: 4, Task: "t1", Allowed: true, Detail: "alice has write access"},
		{Kind: app.AuditCommand, Installation: 2, Repo: "acme/api", Number: 9, Actor: "bob", Task: "t2", Detail: "/agent fix"},
		{Kind: app.AuditAdmission, Installation: 2, Repo: "acme/api", Number: 9, Task: "t2", Detail: "bob has read access only"},
	} {
		if err := audit.Append(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	auditCmd := func(args ...string) (string, error) {
		env, out, _ := testEnv(map[string]string{"AGENTBOT_REDIS_URL": rs.URL})
		err := cmdAudit(t.Context(), args, env)
		return out.String(), err
	}

	table, err := auditCmd("--repo", "octo/hello")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") ||
		!strings.Contains(lines[1], "command") || !strings.Contains(lines[1], "octo/hello#4") || !strings.Contains(lines[1], "/agent fix the flaky test") ||
		!strings.Contains(lines[2], "admission (allowed)") || strings.Contains(table, "acme/api") {
		t.Errorf("audit --repo octo/hello printed:\n%s", table)
	}

	jsonl, err := auditCmd("--json", "--since", "1h")
	if err != nil {
		t.Fatal(err)
	}
	var got []app.AuditEntry
	sc := bufio.NewScanner(strings.NewReader(jsonl))
	for sc.Scan() {
		var e app.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, e)
	}
	if len(got) != 4 || got[2].Actor != "bob" || got[3].Allowed || got[3].Detail != "bob has read access only" {
		t.Errorf("audit --json printed %+v", got)
	}

	if out, err := auditCmd("--since", "2099-01-01"); err != nil || strings.Count(out, "\n") != 1 {
		t.Errorf("audit --since in the future: %v, printed:\n%s", err, out)
	}
	for _, bad := range [][]string{{"--since", "a week"}, {"--since", "-3d"}, {"--since", "7x"}, {"extra"}} {
		out, err := auditCmd(bad...)
		if err == nil || out != "" {
			t.Errorf("audit %q: err %v, printed %q; want an error and nothing printed", bad, err, out)
		}
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Time
	}{
		{"7d", now.AddDate(0, 0, -7)},
		{"0d", now},
		{"36h", now.Add(-36 * time.Hour)},
		{"90m", now.Add(-90 * time.Minute)},
		{"2026-11-01", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)},
		{"2026-11-01T09:30:00Z", time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)},
		{"all", time.Time{}},
		{"", time.Time{}},
	}
	for _, c := range cases {
		got, err := parseSince(c.in, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"7", "d", "-1d", "-2h", "7days", "yesterday", "2026-13-01"} {
		if _, err := parseSince(bad, now); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("parseSince(%q): %v, want an invalid error", bad, err)
		}
	}
}

// FuzzParseSince: any --since is a time no later than now, or a clear
// error.
func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"7d", "36h", "2026-11-01", "2026-11-01T09:30:00Z", "all", "-1d", "9999999999d"} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseSince(s, now)
		if err != nil {
			if app.ErrorCode(err) != app.EInvalid {
				t.Errorf("parseSince(%q): %v, want an invalid error", s, err)
			}
			return
		}
		if got.After(now) && !strings.Contains(s, "-") && !strings.Contains(s, "T") {
			t.Errorf("parseSince(%q) = %v, after now", s, got)
		}
	})
}
