package queue

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/app/policy"
	"github.com/agentbot/agentbot/queue/redistest"
)

// documentedKey is one line of the package doc's key list.
type documentedKey struct {
	pattern  string
	re       *regexp.Regexp
	typ      string // as Redis' TYPE names it, or "asynq"
	lifetime string
}

// documentedKeys parses the key list out of the package doc: the indented
// lines that start with a key pattern. {name} stands for one key segment
// (no colon), * for anything.
func documentedKeys(t *testing.T) []documentedKey {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "queue.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("queue.go has no package doc")
	}
	var keys []documentedKey
	for line := range strings.Lines(f.Doc.Text()) {
		fields := strings.Fields(line)
		if !strings.HasPrefix(line, "\t") || len(fields) < 3 || !strings.Contains(fields[0], ":") {
			continue
		}
		expr := regexp.MustCompile(`\\\{[a-z]+\\\}`).ReplaceAllString(regexp.QuoteMeta(fields[0]), `[^:]+`)
		expr = strings.ReplaceAll(expr, `\*`, `.*`)
		keys = append(keys, documentedKey{pattern: fields[0], re: regexp.MustCompile("^" + expr + "$"), typ: fields[1], lifetime: fields[2]})
	}
	if len(keys) < 10 {
		t.Fatalf("found %d keys in the package doc; its key list is not where or what this test expects", len(keys))
	}
	return keys
}

// lookup returns the documented key that key is, nil when none: of the
// patterns it matches, the most literal one, so that
// agentbot:audit:installations is itself and not an installation's stream.
func lookup(keys []documentedKey, key string) *documentedKey {
	var best *documentedKey
	literal := func(d *documentedKey) int {
		return len(regexp.MustCompile(`\{[a-z]+\}|\*`).ReplaceAllString(d.pattern, ""))
	}
	for i := range keys {
		if keys[i].re.MatchString(key) && (best == nil || literal(&keys[i]) > literal(best)) {
			best = &keys[i]
		}
	}
	return best
}

// TestEveryKeyIsDocumented writes through every operation of the package
// and holds each key then in Redis to the package doc's list: its pattern,
// its type, and whether it expires. A key the list does not name, or a
// listed key no operation writes, fails.
func TestEveryKeyIsDocumented(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	const ttl = 24 * time.Hour
	c, store := NewClient(rdb).WithRetention(ttl), NewStore(rdb).WithRetention(ttl)

	task := sampleTask("t1", time.Now())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.Enqueue(ctx, task)
	must(err)
	_, err = c.MarkSeen(ctx, task.Delivery)
	must(err)
	_, err = c.ClaimBody(ctx, strings.Repeat("ab", 32), task.Delivery)
	must(err)
	_, err = c.EnqueueEvent(ctx, app.OutcomeEvent{ID: "e1", Repo: task.Repo})
	must(err)
	must(store.SetState(ctx, task.ID, app.StateRunning, "step 1"))
	must(store.SaveState(ctx, task.ID, []byte("loop")))
	must(store.SaveProgress(ctx, task.ID, []byte("progress")))
	must(store.RequestStop(ctx, task.ID, "alice"))
	must(store.RecordDecision(ctx, task.ID, []byte("approve")))
	_, err = store.AddNote(ctx, task.ID, app.Note{Task: "t5", By: "alice", Text: "keep the API"})
	must(err)
	_, err = store.ClaimRefusal(ctx, task.Repo, task.Number, "mallory", "t2")
	must(err)
	_, err = store.TasksOfIssue(ctx, task.Repo, task.Number)
	must(err)
	_, err = NewLocks(rdb).Lock(ctx, "octo/hello#3", task.ID, time.Minute)
	must(err)
	must(NewWorkerLeases(rdb, 0).Hold(ctx, "worker/h/1/ab", "h"))
	_, err = NewWorkerLeases(rdb, 0).Deployment(ctx)
	must(err)
	slots := NewSlots(rdb, 1)
	_, err = slots.Acquire(ctx, task)
	must(err)
	// A task of another installation waits; one more of task's is held
	// back, and parked.
	elsewhere := sampleTask("t3", time.Now())
	elsewhere.InstallationID = task.InstallationID + 1
	_, err = c.Enqueue(ctx, elsewhere)
	must(err)
	if ok, err := slots.acquire(ctx, sampleTask("t4", time.Now()), true); err != nil || ok {
		t.Fatalf("a second task of the installation while another waits: %v, %v; want it held back", ok, err)
	}
	audit, err := NewAudit(rdb, AuditOptions{MaxLen: 100, MaxAge: ttl})
	must(err)
	must(audit.Append(ctx, app.AuditEntryFor(app.AuditCommand, &task, "/agent fix")))
	must(NewTraces(rdb, ttl).Append(ctx, task.ID, app.TraceEvent{Kind: app.TracePhase, Name: "admission"}))
	must(NewOutcomes(rdb).Save(ctx, app.TaskOutcome{Task: task.ID, Repo: task.Repo, PR: 4, State: app.StateSucceeded}))
	must(store.SavePull(ctx, app.AgentPull{Repo: task.Repo, Number: 4, Task: task.ID, Requester: "alice"}))
	_, err = store.AnswerCI(ctx, task.Repo, 4, []app.CIAnswer{{Head: "abc", Check: "vet", Task: task.ID, Decision: app.CIFollowUp}})
	must(err)

	must(NewBudgets(rdb).Record(ctx, task.ID, policy.TaskSubjects(task, 42), policy.Spend{Tokens: 10, USD: 0.5}, time.Now()))

	documented := documentedKeys(t)
	seen := map[string]bool{}
	iter := rdb.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		doc := lookup(documented, key)
		if doc == nil {
			t.Errorf("key %q is not in the package doc's key list", key)
			continue
		}
		seen[doc.pattern] = true
		if doc.typ == "asynq" {
			continue // asynq's own keys, its own lifetimes
		}
		typ, err := rdb.Type(ctx, key).Result()
		must(err)
		if typ != doc.typ {
			t.Errorf("key %q is a %s; the package doc says %s (%s)", key, typ, doc.typ, doc.pattern)
		}
		pttl, err := rdb.PTTL(ctx, key).Result()
		must(err)
		switch expires := doc.lifetime != "kept" && doc.lifetime != "trimmed"; {
		case expires && pttl <= 0:
			t.Errorf("key %q does not expire (PTTL %s); the package doc says its lifetime is %q", key, pttl, doc.lifetime)
		case !expires && pttl != -1:
			t.Errorf("key %q expires in %s; the package doc says it is %s", key, pttl, doc.lifetime)
		}
	}
	must(iter.Err())
	for _, d := range documented {
		if !seen[d.pattern] {
			t.Errorf("the package doc lists %s, which no operation of this test wrote", d.pattern)
		}
	}
}

func TestDocumentedKeysAreFoundByTheirPatterns(t *testing.T) {
	t.Parallel()
	keys := documentedKeys(t)
	for key, want := range map[string]string{
		"agentbot:task:t1":                  "agentbot:task:{id}",
		"agentbot:task:t1:stop":             "agentbot:task:{id}:stop",
		"agentbot:audit:7":                  "agentbot:audit:{installation}",
		"agentbot:audit:installations":      "agentbot:audit:installations",
		"agentbot:outcome:t1":               "agentbot:outcome:{task}",
		"agentbot:outcome:pr:octo/hello#3":  "agentbot:outcome:pr:{repo}#{n}",
		"agentbot:pull:octo/hello#3":        "agentbot:pull:{repo}#{n}",
		"agentbot:pull:octo/hello#3:ci":     "agentbot:pull:{repo}#{n}:ci",
		"agentbot:refusal:octo/hello#3:eve": "agentbot:refusal:{repo}#{n}:{who}",
		"asynq:{default}:pending":           "asynq:*",
	} {
		if got := lookup(keys, key); got == nil || got.pattern != want {
			t.Errorf("%s is documented as %+v; want %s", key, got, want)
		}
	}
	if got := lookup(keys, "agentbot:unknown:x"); got != nil {
		t.Errorf("an undocumented key is documented as %s", got.pattern)
	}
}
