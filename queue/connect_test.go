package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
)

func TestConnectRefusesABadURL(t *testing.T) {
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
	rdb := connect(t, redistest.Start(t))
	c := NewClient(rdb)
	if _, err := c.WithMinReplicas(-1, time.Second); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("WithMinReplicas(-1) = %v, want a negative count refused", err)
	}
	if _, err := c.WithMinReplicas(1, 0); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("WithMinReplicas(1, 0) = %v, want a zero timeout refused", err)
	}
}
