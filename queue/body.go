package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ClaimBody remembers, for DeliveryTTL, that the webhook body whose SHA-256
// digest is digest (hex) was first carried by delivery, and returns the
// delivery that carried it first: delivery itself when it is the first, or
// when GitHub redelivers it. Another id means the same signed body is being
// replayed under a new X-GitHub-Delivery, which GitHub never does (each
// event's payload is its own). Claiming and reading are one SET NX GET, so
// two concurrent replays cannot both be first.
func (c *Client) ClaimBody(ctx context.Context, digest, delivery string) (first string, err error) {
	prev, err := c.rdb.SetArgs(ctx, bodyKey(digest), delivery, redis.SetArgs{Mode: "NX", Get: true, TTL: DeliveryTTL}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return delivery, nil // nothing was there: this delivery claimed the body
	case err != nil:
		return "", fmt.Errorf("claim body %s for delivery %s: %w", digest, delivery, err)
	}
	return prev, nil
}

func bodyKey(digest string) string { return "agentbot:body:" + digest }
