package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// durability is how many replicas must hold a delivery's writes before it
// is answered, and how long to wait for them.
type durability struct {
	replicas int
	timeout  time.Duration
}

// ErrNotReplicated is the error of MarkSeen when fewer replicas than
// WithMinReplicas asks for acknowledged the delivery's writes in time. The
// writes are on the primary; the delivery must be answered as a failure
// all the same, since a failover now could lose them, and its redelivery
// finds the task already queued if they survive.
var ErrNotReplicated = errors.New("not acknowledged by enough Redis replicas")

// WithMinReplicas returns a copy of c whose MarkSeen returns only once n
// replicas of the primary hold everything written for the delivery (its
// task, its record and the mark itself), waiting at most timeout, and
// fails with ErrNotReplicated otherwise. Redis replicates asynchronously:
// without this, a primary that fails right after a 202 can take the task
// with it. n 0 waits for none.
//
// It needs a client that can pin one connection (a plain or Sentinel
// client, not a cluster), because WAIT counts the replicas that have the
// writes of its own connection.
func (c *Client) WithMinReplicas(n int, timeout time.Duration) (*Client, error) {
	if n < 0 {
		return nil, fmt.Errorf("min replicas %d: must not be negative", n)
	}
	if n > 0 {
		if timeout <= 0 {
			return nil, fmt.Errorf("replica wait timeout %s: must be positive", timeout)
		}
		if _, ok := c.rdb.(connPinner); !ok {
			return nil, fmt.Errorf("min replicas %d: a %T cannot wait for replicas", n, c.rdb)
		}
	}
	cc := *c
	cc.durable = durability{replicas: n, timeout: timeout}
	return &cc, nil
}

// connPinner is a client that hands out one connection of its pool.
type connPinner interface{ Conn() *redis.Conn }

// MarkSeen remembers delivery for DeliveryTTL and reports whether it was
// already remembered, in one atomic step. Call it only once the delivery's
// work is durably done (its task enqueued): a delivery marked before a
// failed enqueue would make GitHub's redelivery look like a duplicate and
// the command would be lost. It is a delivery's last write, so with
// WithMinReplicas it is where the delivery waits for the replicas.
func (c *Client) MarkSeen(ctx context.Context, delivery string) (already bool, err error) {
	if c.durable.replicas == 0 {
		fresh, err := c.rdb.SetNX(ctx, deliveryKey(delivery), 1, DeliveryTTL).Result()
		if err != nil {
			return false, fmt.Errorf("mark delivery %s: %w", delivery, err)
		}
		return !fresh, nil
	}
	// WAIT counts the replicas that have reached the offset of its own
	// connection's last write. The mark is written on the same connection
	// after the task was queued, and with SET ... GET it is a write even
	// when the delivery was seen before (a redelivery whose first answer
	// failed), so the WAIT below covers everything the delivery wrote.
	cn := c.rdb.(connPinner).Conn()
	defer cn.Close()
	err = cn.SetArgs(ctx, deliveryKey(delivery), 1, redis.SetArgs{TTL: DeliveryTTL, Get: true}).Err()
	switch {
	case err == nil:
		already = true
	case errors.Is(err, redis.Nil):
	default:
		return false, fmt.Errorf("mark delivery %s: %w", delivery, err)
	}
	n, err := cn.Wait(ctx, c.durable.replicas, c.durable.timeout).Result()
	if err != nil {
		return false, fmt.Errorf("wait for replicas of delivery %s: %w", delivery, err)
	}
	if int(n) < c.durable.replicas {
		return false, fmt.Errorf("delivery %s: %d of %d replicas in %s: %w",
			delivery, n, c.durable.replicas, c.durable.timeout, ErrNotReplicated)
	}
	return already, nil
}
