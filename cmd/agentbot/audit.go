package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/redis/go-redis/v9"
)

func cmdAudit(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("audit", env)
	flags := addPeriodFlags(fs, "audit entries", "7d", "print JSON lines, one entry each, for export")
	from, err := flags.parse(fs, args, env)
	if err != nil {
		return err
	}

	return withStore(ctx, *flags.redisURL, func(ctx context.Context, rdb *redis.Client) error {
		// Retention is applied by the writers; a reader never trims.
		audit, err := queue.NewAudit(rdb, queue.AuditOptions{})
		if err != nil {
			return err
		}
		q := queue.AuditQuery{Repo: *flags.repo, Since: from}
		if *flags.json {
			return audit.Export(ctx, jsonEscaper{env.Stdout}, q)
		}
		entries, err := audit.Query(ctx, q)
		if err != nil {
			return err
		}
		return printAuditTable(env.Stdout, entries)
	})
}

func printAuditTable(w io.Writer, entries []app.AuditEntry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tACTOR\tWHERE\tTASK\tDETAIL")
	for _, e := range entries {
		kind := string(e.Kind)
		switch {
		case e.Kind == app.AuditAdmission && e.Allowed:
			kind += " (allowed)"
		case e.Kind == app.AuditAdmission:
			kind += " (refused)"
		}
		where := e.Repo
		if e.Number != 0 {
			where += "#" + strconv.Itoa(e.Number)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.DateTime), printable(kind),
			printable(dash(e.Actor)), printable(dash(where)), printable(dash(e.Task)), printable(strings.ReplaceAll(e.Detail, "\n", " ")))
	}
	return tw.Flush()
}

// dash stands in for an empty table cell, so that columns stay aligned and
// readable.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// parseSince reads a --since value: a duration back from now, where "d"
// counts days (7d, 36h, 90m); a date or time (2026-11-01,
// 2026-11-01T09:00:00Z); or "all". The zero time means no bound.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "all":
		return time.Time{}, nil
	case strings.HasSuffix(s, "d"):
		if days, err := strconv.Atoi(strings.TrimSuffix(s, "d")); err == nil && days >= 0 {
			return now.AddDate(0, 0, -days), nil
		}
	default:
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			return now.Add(-d), nil
		}
		for _, layout := range []string{time.DateOnly, time.RFC3339} {
			if t, err := time.Parse(layout, s); err == nil {
				return t, nil
			}
		}
	}
	return time.Time{}, app.Errorf(app.EInvalid, `--since %q is neither a duration (7d, 12h, 30m), a date (2026-11-01), an RFC 3339 time nor "all".`, s)
}
