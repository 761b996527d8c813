package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentbot/agentbot/app"
	"github.com/agentbot/agentbot/queue"
	"github.com/redis/go-redis/v9"
)

// cmdTrace prints a task's trace: "agentbot trace ID [--json | --markdown]".
func cmdTrace(ctx context.Context, args []string, env Env) error {
	fs := newFlagSet("trace", env)
	setSynopsis(fs, "agentbot trace ID [--json | --markdown]")
	redisURL := fs.String("redis-url", defaultRedisURL, "Redis holding the traces")
	asJSON := fs.Bool("json", false, "print JSON lines, one event each: the trace's download format")
	asMarkdown := fs.Bool("markdown", false, "print the Markdown of the task's check run summary")
	if err := parseFlags(fs, args, env); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageErrorf(fs, "name the task: trace ID")
	}
	// Flags may follow the ID too: "trace ID --json".
	id := fs.Arg(0)
	if err := parseArgs(fs, fs.Args()[1:], env); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	case *asJSON && *asMarkdown:
		return usageErrorf(fs, "--json and --markdown exclude each other")
	}

	var events []app.TraceEvent
	err := withStore(ctx, *redisURL, func(ctx context.Context, rdb *redis.Client) (err error) {
		events, err = queue.NewTraces(rdb, 0).Trace(ctx, id)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		return queue.WriteJSONLines(jsonEscaper{env.Stdout}, events)
	case *asMarkdown:
		_, err := io.WriteString(env.Stdout, printableLines(app.RenderTrace(id, events, app.MaxTextLength-1)))
		return err
	}
	return printTraceTable(env.Stdout, events)
}

func printTraceTable(w io.Writer, events []app.TraceEvent) error {
	s := app.SummarizeTrace(events)
	fmt.Fprintf(w, "%d steps, %d model calls (%d+%d tokens, $%.4f), %d tool calls, checks %d passed %d failed, %d refusals, %s\n\n",
		s.Steps, s.ModelCalls, s.PromptTokens, s.CompletionTokens, s.Cost, s.ToolCalls,
		s.ChecksPassed, s.ChecksFailed, s.Refusals, s.WallTime.Round(time.Millisecond))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tSTEP\tKIND\tNAME\tOUTCOME\tTOOK\tTOKENS\tDETAIL")
	for _, e := range events {
		tokens := "-"
		if n := e.PromptTokens + e.CompletionTokens; n > 0 {
			tokens = fmt.Sprint(n)
		}
		detail := strings.Join(strings.Fields(strings.TrimSpace(e.Args+" "+e.Detail)), " ")
		if r := []rune(detail); len(r) > 80 {
			detail = string(r[:77]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format(time.TimeOnly), e.Step, printable(string(e.Kind)),
			printable(e.Name), printable(dash(e.Outcome)), e.Duration.Round(time.Millisecond), tokens, printable(dash(detail)))
	}
	return tw.Flush()
}
