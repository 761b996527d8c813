package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels of a Sentinel deployment monitor
// its primary under.
const MasterName = "mymaster"

// Sentinel is a replicated Redis watched by three sentinels, all
// processes of one test: a primary, its replicas, and the sentinels that
// promote a replica when the primary stops answering for a second.
type Sentinel struct {
	Primary   *Server
	Replicas  []*Server
	Sentinels []*Server
	// URL is the go-redis failover form naming all three sentinels:
	// redis://s1?master_name=mymaster&addr=s2&addr=s3.
	URL string

	t testing.TB
}

// StartSentinel launches a primary with replicas replicas and three
// sentinels on free loopback ports, and returns once the replicas are in
// sync and every sentinel knows the others and the replicas, so that a
// failover can start at once. Everything is killed when the test ends.
func StartSentinel(t testing.TB, replicas int) *Sentinel {
	t.Helper()
	bin := lookPath(t)
	d := &Sentinel{t: t, Primary: newServer(t, "")}
	d.Primary.start(bin)
	t.Cleanup(d.Primary.Stop)
	for range replicas {
		r := newServer(t, "")
		r.extra = []string{"--replicaof", "127.0.0.1", strconv.Itoa(d.Primary.port)}
		r.start(bin)
		t.Cleanup(r.Stop)
		d.Replicas = append(d.Replicas, r)
	}
	d.waitFor(fmt.Sprintf("%d replicas in sync", replicas), func(ctx context.Context) (bool, error) {
		return d.replicasInSync(ctx, replicas)
	})
	addrs := make([]string, 3)
	for i := range addrs {
		s := newServer(t, "")
		// A sentinel rewrites its configuration file, so each has its own.
		s.conf = filepath.Join(s.dir, "sentinel.conf")
		conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
			"sentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s 3000\n"+
			"sentinel parallel-syncs %[1]s %[3]d\n", MasterName, d.Primary.port, max(replicas, 1))
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatalf("write sentinel config: %v", err)
		}
		s.extra = []string{"--sentinel"}
		s.ready = "+monitor master"
		s.start(bin)
		t.Cleanup(s.Stop)
		d.Sentinels = append(d.Sentinels, s)
		addrs[i] = s.Addr
	}
	d.URL = "redis://" + addrs[0] + "/0?master_name=" + MasterName + "&addr=" + addrs[1] + "&addr=" + addrs[2]
	d.waitFor("the sentinels to know each other and the replicas", func(ctx context.Context) (bool, error) {
		for _, s := range d.Sentinels {
			m, err := d.master(ctx, s)
			if err != nil {
				return false, err
			}
			if m["num-other-sentinels"] != "2" || m["num-slaves"] != strconv.Itoa(replicas) {
				return false, nil
			}
		}
		return true, nil
	})
	return d
}

// PrimaryAddr returns the address the sentinels give for the primary now.
func (d *Sentinel) PrimaryAddr() string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := d.master(ctx, d.Sentinels[0])
	if err != nil {
		d.t.Fatalf("ask a sentinel for the primary: %v", err)
	}
	return m["ip"] + ":" + m["port"]
}

// WaitPromoted waits until the sentinels name a primary other than old and
// it accepts writes, and returns it; it fails the test after timeout.
func (d *Sentinel) WaitPromoted(old string, timeout time.Duration) *Server {
	d.t.Helper()
	var promoted *Server
	d.waitForWithin(timeout, "a replica to be promoted", func(ctx context.Context) (bool, error) {
		// What the sentinels say, for the failure's message.
		var seen []error
		for _, s := range d.Sentinels {
			m, err := d.master(ctx, s)
			if err != nil {
				seen = append(seen, err)
				continue // this sentinel is busy; ask the next
			}
			addr := m["ip"] + ":" + m["port"]
			seen = append(seen, fmt.Errorf("sentinel %s names %s (flags %s, failover state %s)", s.Addr, addr, m["flags"], m["failover-state"]))
			if addr == old {
				continue
			}
			for _, r := range d.Replicas {
				if r.Addr != addr {
					continue
				}
				role, err := info(ctx, r.Addr, "role")
				if err == nil && role == "master" {
					promoted = r
					return true, nil
				}
			}
		}
		return false, errors.Join(seen...)
	})
	return promoted
}

// replicasInSync reports whether n replicas acknowledge a write to the
// primary. A replica is listed online, and its link up, a moment before
// the primary streams writes to it (once it acknowledges the sync): only
// then does WAIT count it. The write leaves no key behind.
func (d *Sentinel) replicasInSync(ctx context.Context, n int) (bool, error) {
	c := redis.NewClient(&redis.Options{Addr: d.Primary.Addr})
	defer c.Close()
	cn := c.Conn()
	defer cn.Close()
	if err := cn.Set(ctx, readyKey, 1, 0).Err(); err != nil {
		return false, err
	}
	if err := cn.Del(ctx, readyKey).Err(); err != nil {
		return false, err
	}
	acked, err := cn.Wait(ctx, n, 100*time.Millisecond).Result()
	return acked >= int64(n), err
}

// readyKey is the key replicasInSync writes and deletes.
const readyKey = "redistest:ready"

// master returns what sentinel s knows of the primary.
func (d *Sentinel) master(ctx context.Context, s *Server) (map[string]string, error) {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	defer c.Close()
	m, err := c.Master(ctx, MasterName).Result()
	if err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", s.Addr, err)
	}
	return m, nil
}

// info returns field of the INFO replication section of the server at addr.
func info(ctx context.Context, addr, field string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	s, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(s, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("no %s in INFO replication of %s", field, addr)
}

func (d *Sentinel) waitFor(what string, ok func(context.Context) (bool, error)) {
	d.t.Helper()
	d.waitForWithin(20*time.Second, what, ok)
}

// waitForWithin polls ok until it holds, failing the test after timeout
// with the last error.
func (d *Sentinel) waitForWithin(timeout time.Duration, what string, ok func(context.Context) (bool, error)) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		done, err := ok(ctx)
		cancel()
		if done {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	d.t.Fatalf("waited %s for %s (last error: %v)", timeout, what, last)
}

// StartReplica launches a replica of primary on a free loopback port and
// returns once it is in sync; it is killed when the test ends.
func StartReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	r := newServer(t, "")
	r.extra = []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}
	r.start(lookPath(t))
	t.Cleanup(r.Stop)
	d := &Sentinel{t: t, Primary: primary}
	d.waitFor("the replica to sync", func(ctx context.Context) (bool, error) {
		return d.replicasInSync(ctx, 1)
	})
	return r
}
