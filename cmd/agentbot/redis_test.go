package main

import (
	"testing"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/redis/go-redis/v9"
)

// testRedis starts a private Redis for one test and connects to it the way
// the commands do.
func testRedis(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	rs := redistest.Start(t)
	rdb, err := queue.Connect(rs.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rs, rdb
}
