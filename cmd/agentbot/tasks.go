package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbot/agentbot/queue"
	"github.com/redis/go-redis/v9"
)

func cmdTasks(ctx context.Context, args []string, env Env) error {
	const synopsis = "agentbot tasks list [--json] [--limit N] | agentbot tasks show ID [--json] | agentbot tasks trace ID [--json | --markdown]"
	switch {
	case len(args) == 0:
		return &usageError{cmd: "agentbot tasks", err: errors.New("name a tasks command: list, show or trace")}
	case isHelp(args[0]):
		fmt.Fprintln(env.Stdout, "usage: "+synopsis)
		return flag.ErrHelp
	case args[0] == "trace":
		return cmdTrace(ctx, args[1:], env)
	case args[0] != "list" && args[0] != "show":
		return &usageError{cmd: "agentbot tasks", err: fmt.Errorf("unknown tasks command %q", args[0])}
	}
	fs := newFlagSet("tasks "+args[0], env)
	setSynopsis(fs, synopsis)
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis holding the queue")
	asJSON := fs.Bool("json", false, "print JSON")
	limit := fs.Int("limit", 50, "list at most this many tasks, newest first")
	if err := parseFlags(fs, args[1:], env); err != nil {
		return err
	}
	var id string
	if args[0] == "show" {
		if fs.NArg() == 0 {
			return usageErrorf(fs, "name the task: tasks show ID")
		}
		// Flags may follow the ID too: "tasks show ID --json".
		id = fs.Arg(0)
		if err := parseArgs(fs, fs.Args()[1:], env); err != nil {
			return err
		}
	}
	if fs.NArg() > 0 {
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}

	return withStore(ctx, *redisURL, func(ctx context.Context, rdb *redis.Client) error {
		store := queue.NewStore(rdb)
		switch args[0] {
		case "list":
			recs, err := store.List(ctx, *limit)
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(env.Stdout, taskViews(recs...))
			}
			return printTaskTable(env.Stdout, recs)
		case "show":
			rec, err := store.Task(ctx, id)
			if err != nil {
				return err
			}
			return printTask(env.Stdout, rec, *asJSON)
		}
		return nil
	})
}

// taskView is a record as the command line prints it: every field of the
// issue's list is present, even when empty.
type taskView struct {
	queue.Record
	Instructions string `json:"instructions"`
}

func taskViews(recs ...queue.Record) []taskView {
	views := make([]taskView, len(recs))
	for i, r := range recs {
		views[i] = taskView{Record: r, Instructions: r.Instructions}
	}
	return views
}

// printJSON prints v as indented JSON, safe for a terminal.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(jsonEscaper{w})
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printTaskTable(w io.Writer, recs []queue.Record) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tVERB\tWHERE\tREQUESTER\tCREATED")
	for _, r := range recs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", printable(r.ID), printable(string(r.State)), printable(string(r.Verb)), where(r),
			printable(r.Requester), r.ReceivedAt.Local().Format(time.DateTime))
	}
	return tw.Flush()
}

// printTask prints one task, as "tasks show" does.
func printTask(w io.Writer, r queue.Record, asJSON bool) error {
	if asJSON {
		return printJSON(w, taskViews(r)[0])
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "task:\t%s\n", printable(r.ID))
	fmt.Fprintf(tw, "state:\t%s\n", printable(strings.TrimSpace(string(r.State)+" "+r.Step)))
	fmt.Fprintf(tw, "verb:\t%s\n", printable(string(r.Verb)))
	fmt.Fprintf(tw, "where:\t%s\n", where(r))
	fmt.Fprintf(tw, "requester:\t%s\n", printable(r.Requester))
	fmt.Fprintf(tw, "delivery:\t%s (%s)\n", printable(r.Delivery), printable(r.Event))
	if rc := r.ReviewComment; rc != nil {
		fmt.Fprintf(tw, "on line:\t%s:%d\n", printable(rc.Path), rc.Line)
	}
	fmt.Fprintf(tw, "created:\t%s\n", r.ReceivedAt.Local().Format(time.DateTime))
	fmt.Fprintf(tw, "updated:\t%s\n", r.UpdatedAt.Local().Format(time.DateTime))
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Instructions != "" {
		_, err := fmt.Fprintf(w, "instructions:\n  %s\n", strings.ReplaceAll(printableLines(r.Instructions), "\n", "\n  "))
		return err
	}
	return nil
}

// where names the issue or pull request of a task the way GitHub does.
func where(r queue.Record) string {
	kind := "issue"
	if r.IsPR {
		kind = "PR"
	}
	return fmt.Sprintf("%s#%d (%s)", printable(r.Repo), r.Number, kind)
}
