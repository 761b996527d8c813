package main

import (
	"context"
	"flag"
	"time"

	"github.com/redis/go-redis/v9"
)

// storeTimeout bounds each read of the task store from the command line.
const storeTimeout = 5 * time.Second

// periodFlags are the flags of the commands that report over a span of
// time (audit, stats): --redis-url, --repo, --since and --json.
type periodFlags struct {
	redisURL, repo, since *string
	json                  *bool
}

// addPeriodFlags defines the period flags on fs; what names the records in
// the help texts, since is --since's default.
func addPeriodFlags(fs *flag.FlagSet, what, since, jsonHelp string) periodFlags {
	return periodFlags{
		redisURL: fs.String("redis-url", defaultRedisURL, "Redis holding the "+what),
		repo:     fs.String("repo", "", "only "+what+" about this repository (owner/name)"),
		since:    fs.String("since", since, "only "+what+` this recent: a duration such as 7d, 12h, 30m, a date (2026-11-01) or "all"`),
		json:     fs.Bool("json", false, jsonHelp),
	}
}

// parse reads args into the flags and returns when the period starts.
func (p periodFlags) parse(fs *flag.FlagSet, args []string, env Env) (time.Time, error) {
	if err := parseFlags(fs, args, env); err != nil {
		return time.Time{}, err
	}
	if fs.NArg() > 0 {
		return time.Time{}, usageErrorf(fs, "unexpected argument %q", fs.Arg(0))
	}
	return parseSince(*p.since, time.Now())
}

// withStore connects to the Redis at url for one command-line read and
// calls f with a context bounded by storeTimeout.
func withStore(ctx context.Context, url string, f func(ctx context.Context, rdb *redis.Client) error) error {
	rdb, err := connectRedis(ctx, url)
	if err != nil {
		return err
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return f(ctx, rdb)
}
