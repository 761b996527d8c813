package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Locks are the per-issue locks that keep one task at a time on an issue
// or pull request. A lock is a key holding its owner's task id with a TTL:
// the owner renews it while it runs, a worker that dies leaves it to
// expire, and the owner's own task — the same id, resumed on another
// worker — takes it back at once instead of waiting for the expiry. The
// package doc lists its keys.
type Locks struct {
	rdb redis.UniversalClient
}

// NewLocks returns Locks over rdb, which the caller closes.
func NewLocks(rdb redis.UniversalClient) *Locks { return &Locks{rdb: rdb} }

func lockKey(key string) string { return "agentbot:lock:" + key }

// lockScript takes the lock for its owner, or gives it back to the owner
// that holds it already (a resumed task), in one step: SET NX would refuse
// the owner its own lock.
//
//	KEYS: lock
//	ARGV: owner, ttl in milliseconds
//	returns the holder after the call
var lockScript = redis.NewScript(`
local holder = redis.call('GET', KEYS[1])
if holder == false or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
return holder`)

// renewScript extends the lock's TTL only while owner holds it.
//
//	KEYS: lock
//	ARGV: owner, ttl in milliseconds
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// unlockScript deletes the lock only while owner holds it, so that an
// owner whose lock expired never frees the next holder's.
//
//	KEYS: lock
//	ARGV: owner
var unlockScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// Lock takes the lock key for owner for ttl, unless another owner holds
// it, and returns the holder: owner when it got the lock.
func (l *Locks) Lock(ctx context.Context, key, owner string, ttl time.Duration) (holder string, err error) {
	holder, err = lockScript.Run(ctx, l.rdb, []string{lockKey(key)}, owner, ttl.Milliseconds()).Text()
	if err != nil {
		return "", fmt.Errorf("lock %s for task %s: %w", key, owner, err)
	}
	return holder, nil
}

// Renew extends owner's lock key by ttl; held is false when owner no
// longer holds it (it expired and may be another's).
func (l *Locks) Renew(ctx context.Context, key, owner string, ttl time.Duration) (held bool, err error) {
	n, err := renewScript.Run(ctx, l.rdb, []string{lockKey(key)}, owner, ttl.Milliseconds()).Int()
	if err != nil {
		return false, fmt.Errorf("renew lock %s of task %s: %w", key, owner, err)
	}
	return n == 1, nil
}

// Unlock frees the lock key if owner holds it.
func (l *Locks) Unlock(ctx context.Context, key, owner string) error {
	if err := unlockScript.Run(ctx, l.rdb, []string{lockKey(key)}, owner).Err(); err != nil {
		return fmt.Errorf("unlock %s of task %s: %w", key, owner, err)
	}
	return nil
}
