package queue

import (
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// Connect opens a connection pool to the Redis at rawURL, which is either a
// plain server (redis://[:password@]host:port/db) or, when it names a
// master_name, a Sentinel deployment in go-redis's failover form:
//
//	redis://sentinel-1:26379?master_name=mymaster&addr=sentinel-2:26379&addr=sentinel-3:26379
//
// where the host and every addr are sentinels, the user info is the
// sentinels' own credentials and a password parameter is the primary's.
// A failover pool asks the sentinels for the primary on every new
// connection and follows their switch-master announcements, so the
// intake, the workers and the CLI all move to a promoted replica without
// a restart. Either way the timeouts are short unless the URL names its
// own (dial_timeout, read_timeout, write_timeout, pool_timeout,
// max_retries): the webhook must answer 503 within two seconds when Redis
// is gone, never hang.
func Connect(rawURL string) (*redis.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	q := u.Query()
	if q.Has("master_name") {
		opt, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parse redis sentinel url: %w", err)
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("parse redis sentinel url: master_name is empty")
		}
		short(q, &opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries)
		opt.PoolSize = max(opt.PoolSize, poolSize)
		return redis.NewFailoverClient(opt), nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	short(q, &opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.PoolTimeout, &opt.MaxRetries)
	opt.PoolSize = max(opt.PoolSize, poolSize)
	return redis.NewClient(opt), nil
}

// short sets the timeouts and retries that the URL's query q does not
// name to agentbot's: one retry, redisTimeout for each wait.
func short(q url.Values, dial, read, write, pool *time.Duration, retries *int) {
	for name, d := range map[string]*time.Duration{"dial_timeout": dial, "read_timeout": read, "write_timeout": write, "pool_timeout": pool} {
		if !q.Has(name) {
			*d = redisTimeout
		}
	}
	if !q.Has("max_retries") {
		*retries = 1
	}
}

// Every pool's timeouts, and the least number of connections it keeps: a
// burst of deliveries each holds a connection for a few round trips, and
// the default pool (ten per CPU) makes them queue for one.
const (
	redisTimeout = 500 * time.Millisecond
	poolSize     = 128
)
