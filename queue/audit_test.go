package queue

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue/redistest"
)

// newAudit is an audit log in a private Redis, through a patient client:
// a thousand appends at the suite's load may miss 500 ms once, which is no
// fault of the log's.
func newAudit(t *testing.T, opts AuditOptions) *Audit {
	t.Helper()
	a, err := NewAudit(connectURL(t, redistest.Patient(redistest.Start(t).URL)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func appendAll(t *testing.T, a *Audit, entries ...app.AuditEntry) {
	t.Helper()
	for _, e := range entries {
		if err := a.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// details lists the entries' details, which the tests use as their names.
func details(entries []app.AuditEntry) []string {
	var d []string
	for _, e := range entries {
		d = append(d, e.Detail)
	}
	return d
}

func TestAuditKeepsOrderAcrossInstallationsAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newAudit(t, AuditOptions{})
	task := &app.Task{ID: "t1", InstallationID: 7, Repo: "octo/Hello", Number: 3, Requester: "alice"}
	early := []app.AuditEntry{
		app.AuditEntryFor(app.AuditCommand, task, "1 /agent fix"),
		{Kind: app.AuditCommand, Installation: 9, Repo: "other/repo", Actor: "bob", Detail: "2 /agent fix"},
		app.AuditEntryFor(app.AuditAdmission, task, "3 admitted"),
	}
	late := []app.AuditEntry{
		{Kind: app.AuditBlocked, Installation: 7, Repo: "octo/hello", Task: "t1", Detail: "4 write .github/workflows/ci.yml"},
		{Kind: app.AuditPush, Installation: 7, Repo: "octo/hello", Task: "t1", Detail: "5 agent/3-fix abc123"},
		{Kind: app.AuditPolicyError, Installation: 9, Repo: "other/repo", Detail: "6 line 3: unknown key"},
	}
	appendAll(t, a, early...)
	time.Sleep(5 * time.Millisecond) // stream ids have millisecond resolution
	cut := time.Now()
	time.Sleep(5 * time.Millisecond)
	appendAll(t, a, late...)

	cases := []struct {
		name string
		q    AuditQuery
		want []string
	}{
		{"all", AuditQuery{}, []string{"1 /agent fix", "2 /agent fix", "3 admitted", "4 write .github/workflows/ci.yml", "5 agent/3-fix abc123", "6 line 3: unknown key"}},
		{"repo, any case", AuditQuery{Repo: "OCTO/hello"}, []string{"1 /agent fix", "3 admitted", "4 write .github/workflows/ci.yml", "5 agent/3-fix abc123"}},
		{"since", AuditQuery{Since: cut}, []string{"4 write .github/workflows/ci.yml", "5 agent/3-fix abc123", "6 line 3: unknown key"}},
		{"repo and since", AuditQuery{Repo: "other/repo", Since: cut}, []string{"6 line 3: unknown key"}},
		{"unknown repo", AuditQuery{Repo: "no/such"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := a.Query(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(details(got)) != fmt.Sprint(c.want) {
				t.Errorf("got %q\nwant %q", details(got), c.want)
			}
		})
	}

	got, err := a.Query(ctx, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	first := got[0]
	if first.ID == "" || first.Time.IsZero() || first.Actor != "alice" || first.Number != 3 || first.Task != "t1" || first.Installation != 7 {
		t.Errorf("first entry lost fields: %+v", first)
	}
}

func TestAuditReadsPastOnePage(t *testing.T) {
	t.Parallel()
	a := newAudit(t, AuditOptions{})
	const n = 2*auditPage + 3
	for i := range n {
		appendAll(t, a, app.AuditEntry{Kind: app.AuditCommand, Installation: int64(i % 2), Detail: fmt.Sprint(i)})
	}
	got, err := a.Query(context.Background(), AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d entries, want %d", len(got), n)
	}
	for i, e := range got {
		if e.Detail != fmt.Sprint(i) {
			t.Fatalf("entry %d is %q: order lost", i, e.Detail)
		}
	}
}

func TestAuditRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 1000
	fill := func(t *testing.T, a *Audit, from, to int) {
		for i := from; i < to; i++ {
			appendAll(t, a, app.AuditEntry{Kind: app.AuditCommand, Installation: 1, Detail: fmt.Sprint(i)})
		}
	}
	// kept checks that the log holds between min and max entries, all of
	// them the newest, in order.
	kept := func(t *testing.T, a *Audit, total, min, max int) {
		t.Helper()
		got, err := a.Query(ctx, AuditQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < min || len(got) > max {
			t.Fatalf("%d entries kept, want %d to %d", len(got), min, max)
		}
		for i, e := range got {
			if want := fmt.Sprint(total - len(got) + i); e.Detail != want {
				t.Fatalf("entry %d is %q, want %q: not the newest in order", i, e.Detail, want)
			}
		}
	}

	t.Run("max length", func(t *testing.T) {
		a := newAudit(t, AuditOptions{MaxLen: 100})
		fill(t, a, 0, n)
		// Approximate trimming drops whole stream nodes (100 entries by
		// default), never an entry within the bound.
		kept(t, a, n, 100, 300)
	})
	t.Run("max age", func(t *testing.T) {
		a := newAudit(t, AuditOptions{MaxAge: 20 * time.Millisecond})
		fill(t, a, 0, 300)
		time.Sleep(50 * time.Millisecond) // the first 300 are now too old
		fill(t, a, 300, 301)
		kept(t, a, 301, 1, 101)
	})
}

func TestAuditRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newAudit(t, AuditOptions{})
	appendAll(t, a, app.AuditEntry{Kind: app.AuditPROpened, Repo: "o/r", Detail: "kept"})
	for _, kind := range []app.AuditKind{"", "edited"} {
		err := a.Append(ctx, app.AuditEntry{Kind: kind, Repo: "o/r"})
		if app.ErrorCode(err) != app.EInvalid {
			t.Errorf("kind %q: %v, want an invalid error", kind, err)
		}
	}
	got, err := a.Query(ctx, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(details(got)) != "[kept]" {
		t.Errorf("log holds %q after refused appends", details(got))
	}
	for _, opts := range []AuditOptions{{MaxLen: -1}, {MaxAge: -time.Hour}} {
		if _, err := NewAudit(a.rdb, opts); app.ErrorCode(err) != app.EInvalid {
			t.Errorf("NewAudit(%+v): %v, want an invalid error", opts, err)
		}
	}
}

func TestAuditExportsJSONLines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newAudit(t, AuditOptions{})
	appendAll(t, a,
		app.AuditEntry{Kind: app.AuditApproval, Installation: 1, Repo: "o/r", Actor: "carol", Detail: "run make deploy"},
		app.AuditEntry{Kind: app.AuditAdmission, Installation: 1, Repo: "o/r", Allowed: true, Detail: "write access"},
	)
	var buf bytes.Buffer
	if err := a.Export(ctx, &buf, AuditQuery{}); err != nil {
		t.Fatal(err)
	}
	want, err := a.Query(ctx, AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	var got []app.AuditEntry
	for sc.Scan() {
		var e app.AuditEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, e)
	}
	if len(got) != 2 || got[0].Actor != "carol" || !got[1].Allowed || got[0].ID != want[0].ID || !got[1].Time.Equal(want[1].Time) {
		t.Errorf("exported %+v\nwant %+v", got, want)
	}
}

// benchRedis is connect for benchmarks: a private Redis, closed after.
func benchRedis(b *testing.B) *redis.Client {
	rdb, err := Connect(redistest.Start(b).URL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Close() })
	return rdb
}

// BenchmarkAuditAppend measures one entry appended with both retention
// bounds on, as a worker writes it.
func BenchmarkAuditAppend(b *testing.B) {
	rdb := benchRedis(b)
	a, err := NewAudit(rdb, AuditOptions{MaxLen: 100_000, MaxAge: 90 * 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	e := app.AuditEntry{Kind: app.AuditCommand, Installation: 1, Repo: "octo/hello", Number: 4, Actor: "alice", Task: "t1", Detail: "/agent fix the flaky test"}
	ctx := context.Background()
	for b.Loop() {
		if err := a.Append(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAuditQuery measures reading a 10,000-entry log over two
// installations, filtered by repository.
func BenchmarkAuditQuery(b *testing.B) {
	rdb := benchRedis(b)
	a, err := NewAudit(rdb, AuditOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 10_000 {
		repo := []string{"octo/hello", "acme/api"}[i%2]
		if err := a.Append(ctx, app.AuditEntry{Kind: app.AuditPush, Installation: int64(i % 2), Repo: repo, Detail: "agent/4-fix abc123"}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		got, err := a.Query(ctx, AuditQuery{Repo: "octo/hello"})
		if err != nil || len(got) != 5000 {
			b.Fatalf("%d entries, %v", len(got), err)
		}
	}
}

// An entry's text, whoever wrote it, is capped before it is stored.
func TestAuditCapsEntries(t *testing.T) {
	t.Parallel()
	a := newAudit(t, AuditOptions{})
	huge := strings.Repeat("h", 512<<10)
	appendAll(t, a, app.AuditEntry{Kind: app.AuditBlocked, Installation: 1, Actor: huge, Repo: "octo/" + huge, Task: huge, Detail: "setup tried to reach " + huge})
	got, err := a.Query(context.Background(), AuditQuery{})
	if err != nil || len(got) != 1 {
		t.Fatalf("%d entries, %v; want 1", len(got), err)
	}
	e := got[0]
	if len(e.Detail) > app.MaxAuditDetail || !strings.HasPrefix(e.Detail, "setup tried to reach hhh") {
		t.Errorf("detail of %d bytes; want the head of it, at most %d", len(e.Detail), app.MaxAuditDetail)
	}
	for _, f := range []string{e.Actor, e.Repo, e.Task} {
		if len(f) > app.MaxAuditLabel {
			t.Errorf("a field of %d bytes; want at most %d", len(f), app.MaxAuditLabel)
		}
	}
	mem, err := a.rdb.MemoryUsage(context.Background(), auditKey(1)).Result()
	if err != nil || mem > 16<<10 {
		t.Errorf("the stream takes %d bytes of Redis memory (%v); want a few KiB", mem, err)
	}
}
