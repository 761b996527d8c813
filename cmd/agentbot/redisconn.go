package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue"
)

// redisPingTimeout bounds the first PING of a command's Redis.
const redisPingTimeout = 3 * time.Second

// connectRedis connects to the Redis at rawURL and checks that it answers,
// so that a command fails at once with one sentence naming the server
// rather than later, in the middle of its work.
//
// Until Redis has answered, go-redis's own logger is silent: its pool
// warnings would only repeat that one sentence. Long-running commands
// route it into their log afterwards.
func connectRedis(ctx context.Context, rawURL string) (*redis.Client, error) {
	quietRedis()
	rdb, err := queue.Connect(rawURL)
	if err != nil {
		return nil, fmt.Errorf("--redis-url %s: %w", redactURL(rawURL), err)
	}
	ctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		if _, ok := errors.AsType[redis.Error](err); ok {
			return nil, fmt.Errorf("the Redis at %s refused the connection (%v): check the password and database in --redis-url (AGENTBOT_REDIS_URL)", redactURL(rawURL), err)
		}
		return nil, fmt.Errorf("no answer from Redis at %s (%v): start it, or point --redis-url (AGENTBOT_REDIS_URL) at one", redactURL(rawURL), err)
	}
	return rdb, nil
}

// quietRedis silences go-redis's process-wide logger, whose pool warnings
// would only repeat, on a command line, the one error the command returns.
func quietRedis() { redis.SetLogger(discardRedisLog{}) }

type discardRedisLog struct{}

func (discardRedisLog) Printf(context.Context, string, ...any) {}

// redactURL hides the password of a Redis URL, which error messages and
// logs must not show.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparseable URL)"
	}
	return u.Redacted()
}
