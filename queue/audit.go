package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/app"
)

// Audit is the append-only audit log: one Redis stream per installation,
// written with XADD and never edited. Stream ids are Redis' own
// (milliseconds-sequence), so entries keep the order in which Redis
// received them, whichever worker wrote them. The package doc lists its
// keys.
type Audit struct {
	rdb  redis.UniversalClient
	opts AuditOptions
}

// AuditOptions bound how much of the log Redis keeps. Trimming is
// approximate ("~"): Redis drops whole internal nodes only, which keeps
// XADD cheap, so a stream may hold somewhat more than asked, never less.
type AuditOptions struct {
	MaxLen int64         // keep about this many entries per installation; 0: no bound
	MaxAge time.Duration // drop entries older than this; 0: no bound
}

const auditInstallationsKey = "agentbot:audit:installations"

func auditKey(installation int64) string {
	return "agentbot:audit:" + strconv.FormatInt(installation, 10)
}

// auditPage is how many entries Query reads per round trip.
const auditPage = 500

// NewAudit returns the audit log over rdb, which the caller closes.
func NewAudit(rdb redis.UniversalClient, opts AuditOptions) (*Audit, error) {
	if opts.MaxLen < 0 || opts.MaxAge < 0 {
		return nil, app.Errorf(app.EInvalid, "Audit retention must not be negative (max length %d, max age %s).", opts.MaxLen, opts.MaxAge)
	}
	return &Audit{rdb: rdb, opts: opts}, nil
}

// Append adds e to its installation's stream, its text fields capped
// (app.AuditEntry.Capped), stamping e.Time when it is zero, and applies
// the retention. An entry of an unknown kind is refused
// with an *app.Error and nothing is written.
func (a *Audit) Append(ctx context.Context, e app.AuditEntry) error {
	if !e.Kind.Valid() {
		return app.Errorf(app.EInvalid, "Unknown audit entry kind %q.", e.Kind)
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.ID = "" // the stream assigns it
	b, err := json.Marshal(e.Capped())
	if err != nil {
		return fmt.Errorf("encode audit entry: %w", err)
	}
	key := auditKey(e.Installation)
	_, err = a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: key, MaxLen: a.opts.MaxLen, Approx: a.opts.MaxLen > 0, Values: []any{"e", b}})
		// XADD takes MAXLEN or MINID, not both: the age bound is a
		// separate trim in the same transaction.
		if a.opts.MaxAge > 0 {
			minID := strconv.FormatInt(time.Now().Add(-a.opts.MaxAge).UnixMilli(), 10)
			p.XTrimMinIDApprox(ctx, key, minID, 0)
		}
		p.SAdd(ctx, auditInstallationsKey, e.Installation)
		return nil
	})
	if err != nil {
		return fmt.Errorf("append %s audit entry for %s: %w", e.Kind, e.Repo, err)
	}
	return nil
}

// AuditQuery selects audit entries. Zero fields select everything.
type AuditQuery struct {
	Repo  string    // owner/name, compared without regard to case as GitHub does
	Since time.Time // entries appended at or after this time
}

// Export writes the entries q selects as JSON lines, oldest first.
func (a *Audit) Export(ctx context.Context, w io.Writer, q AuditQuery) error {
	entries, err := a.Query(ctx, q)
	if err != nil {
		return err
	}
	return WriteJSONLines(w, entries)
}

// Query returns the entries q selects across every installation, oldest
// first.
func (a *Audit) Query(ctx context.Context, q AuditQuery) ([]app.AuditEntry, error) {
	insts, err := a.rdb.SMembers(ctx, auditInstallationsKey).Result()
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	start := "-"
	if !q.Since.IsZero() {
		start = strconv.FormatInt(q.Since.UnixMilli(), 10)
	}
	var entries []app.AuditEntry
	for _, inst := range insts {
		key := "agentbot:audit:" + inst
		for from := start; ; {
			msgs, err := a.rdb.XRangeN(ctx, key, from, "+", auditPage).Result()
			if err != nil {
				return nil, fmt.Errorf("read audit log %s: %w", key, err)
			}
			for _, m := range msgs {
				e, err := decodeAuditEntry(m)
				if err != nil {
					return nil, fmt.Errorf("read audit log %s: %w", key, err)
				}
				if q.Repo == "" || strings.EqualFold(e.Repo, q.Repo) {
					entries = append(entries, e)
				}
			}
			if len(msgs) < auditPage {
				break
			}
			from = "(" + msgs[len(msgs)-1].ID // exclusive: the next page
		}
	}
	slices.SortStableFunc(entries, compareAuditEntries)
	return entries, nil
}

func decodeAuditEntry(m redis.XMessage) (app.AuditEntry, error) {
	raw, _ := m.Values["e"].(string)
	var e app.AuditEntry
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return e, fmt.Errorf("decode entry %s: %w", m.ID, err)
	}
	e.ID = m.ID
	return e, nil
}

// compareAuditEntries orders entries by their stream ids ("ms-seq",
// compared as numbers, which string order does not do). Ids of different
// streams share only the millisecond: within one, the writer's clock
// decides.
func compareAuditEntries(x, y app.AuditEntry) int {
	xm, xs := splitStreamID(x.ID)
	ym, ys := splitStreamID(y.ID)
	if c := cmp.Compare(xm, ym); c != 0 || x.Installation == y.Installation {
		return cmp.Or(c, cmp.Compare(xs, ys))
	}
	return x.Time.Compare(y.Time)
}

func splitStreamID(id string) (ms, seq uint64) {
	a, b, _ := strings.Cut(id, "-")
	ms, _ = strconv.ParseUint(a, 10, 64)
	seq, _ = strconv.ParseUint(b, 10, 64)
	return ms, seq
}
