// Package queuetest lets tests of workers that die skip the minute asynq
// takes to notice: asynq keeps the lease of each running task as a score in
// Unix seconds, which its live worker extends every 5 s to 30 s ahead, and
// its recoverer hands a task whose lease ended to another worker when that
// worker starts and then once a minute.
package queuetest

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ExpireLeases moves a minute into the past every lease on queue's running
// tasks that ends by before, as if that minute had gone by, and returns how
// many it moved. Leases of live workers end 30 s after their last
// extension at the latest; a worker dead since killed holds only leases
// that end by killed+30 s, so before = killed+30 s picks them alone once
// the live ones have been extended past it (10 s after the kill).
func ExpireLeases(ctx context.Context, rdb redis.UniversalClient, queue string, before time.Time) (int, error) {
	key := "asynq:{" + queue + "}:lease"
	leases, err := rdb.ZRangeByScoreWithScores(ctx, key,
		&redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(before.Unix(), 10)}).Result()
	if err != nil {
		return 0, fmt.Errorf("read the leases of %s: %w", queue, err)
	}
	if len(leases) == 0 {
		return 0, nil
	}
	for i := range leases {
		leases[i].Score -= 60
	}
	if err := rdb.ZAddXX(ctx, key, leases...).Err(); err != nil {
		return 0, fmt.Errorf("expire the leases of %s: %w", queue, err)
	}
	return len(leases), nil
}
