package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
)

func TestConnectRefusesABadURL(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"http://localhost:6379":                           "parse redis url",
		"redis://s1:26379?master_name=m&addr=nohostport":  "parse redis sentinel url",
		"redis://s1:26379?master_name=m&no_such_option=1": "parse redis sentinel url",
		"redis://s1:26379?master_name=&addr=s2:26379":     "master_name is empty",
		"redis://%zz": "parse redis url",
		"redis://localhost:6379/0?master_nam=m&addr=s2:26379": "parse redis url",
	} {
		rdb, err := Connect(url)
		if err == nil {
			rdb.Close()
			t.Errorf("Connect(%q) = nil error, want one containing %q", url, want)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Connect(%q) = %v, want %q", url, err, want)
		}
	}
}

func TestConnectThroughSentinels(t *testing.T) {
	t.Parallel()
	d := redistest.StartSentinel(t, 1)
	rdb, err := Connect(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("write through the sentinels: %v", err)
	}
	port, err := rdb.ConfigGet(t.Context(), "port").Result()
	if err != nil || !strings.HasSuffix(d.Primary.Addr, ":"+port["port"]) {
		t.Errorf("connected to port %v (%v), want the primary %s", port, err, d.Primary.Addr)
	}
}

func TestWithMinReplicasRefusesBadSettings(t *testing.T) {
	t.Parallel()
	rdb := connect(t, redistest.Start(t))
	c := NewClient(rdb)
	if _, err := c.WithMinReplicas(-1, time.Second); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("WithMinReplicas(-1) = %v, want a negative count refused", err)
	}
	if _, err := c.WithMinReplicas(1, 0); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("WithMinReplicas(1, 0) = %v, want a zero timeout refused", err)
	}
}

// TestConnectKeepsTheURLsTimeouts: the timeouts are short unless the URL
// names its own, in either form, one setting at a time.
func TestConnectKeepsTheURLsTimeouts(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"redis://localhost:6379/0?read_timeout=5s&max_retries=3",
		"redis://s1:26379?master_name=m&addr=s2:26379&read_timeout=5s&max_retries=3",
	} {
		rdb, err := Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		o := rdb.Options()
		rdb.Close()
		if o.ReadTimeout != 5*time.Second || o.MaxRetries != 3 {
			t.Errorf("Connect(%q): read timeout %s, %d retries; want the URL's 5s and 3", url, o.ReadTimeout, o.MaxRetries)
		}
		if o.DialTimeout != redisTimeout || o.WriteTimeout != redisTimeout || o.PoolTimeout != redisTimeout {
			t.Errorf("Connect(%q): dial %s, write %s, pool %s; want %s where the URL names none", url, o.DialTimeout, o.WriteTimeout, o.PoolTimeout, redisTimeout)
		}
	}
	rdb, err := Connect("redis://localhost:6379/0")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if o := rdb.Options(); o.ReadTimeout != redisTimeout || o.MaxRetries != 1 {
		t.Errorf("a URL without settings: read timeout %s, %d retries; want %s and 1", o.ReadTimeout, o.MaxRetries, redisTimeout)
	}
}
