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
// a restart. Either way the timeouts are short on purpose: the webhook must
// answer 503 within two seconds when Redis is gone, never hang.
func Connect(rawURL string) (*redis.Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	if u.Query().Has("master_name") {
		opt, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("parse redis sentinel url: %w", err)
		}
		if opt.MasterName == "" {
			return nil, fmt.Errorf("parse redis sentinel url: master_name is empty")
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = redisTimeout, redisTimeout, redisTimeout, redisTimeout
		opt.MaxRetries = 1
		opt.PoolSize = max(opt.PoolSize, poolSize)
		return redis.NewFailoverClient(opt), nil
	}
	opt, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("parse redis url: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = redisTimeout, redisTimeout, redisTimeout, redisTimeout
	opt.MaxRetries = 1
	opt.PoolSize = max(opt.PoolSize, poolSize)
	return redis.NewClient(opt), nil
}

// Every pool's timeouts, and the least number of connections it keeps: a
// burst of deliveries each holds a connection for a few round trips, and
// the default pool (ten per CPU) makes them queue for one.
const (
	redisTimeout = 500 * time.Millisecond
	poolSize     = 128
)
