package redistest

import (
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartStopRestart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	ping := func() error {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return err
		}
		buf := make([]byte, 7)
		_, err = c.Read(buf)
		if err == nil && string(buf) != "+PONG\r\n" {
			t.Fatalf("PING answered %q", buf)
		}
		return err
	}
	if err := ping(); err != nil {
		t.Fatalf("ping a started server: %v", err)
	}
	s.Stop()
	if err := ping(); err == nil {
		t.Fatal("ping succeeded on a stopped server")
	}
	s.Restart()
	if err := ping(); err != nil {
		t.Fatalf("ping a restarted server: %v", err)
	}
}

func TestSentinelPromotesAReplica(t *testing.T) {
	t.Parallel()
	d := StartSentinel(t, 1)
	old := d.PrimaryAddr()
	if old != d.Primary.Addr {
		t.Fatalf("sentinels name %s as the primary, want %s", old, d.Primary.Addr)
	}
	d.Primary.Stop()
	start := time.Now()
	promoted := d.WaitPromoted(old, time.Minute)
	if promoted != d.Replicas[0] {
		t.Fatalf("promoted %v, want the only replica %s", promoted, d.Replicas[0].Addr)
	}
	t.Logf("failover took %s", time.Since(start))
	opt, err := redis.ParseFailoverURL(d.URL)
	if err != nil {
		t.Fatalf("parse %s: %v", d.URL, err)
	}
	c := redis.NewFailoverClient(opt)
	defer c.Close()
	if err := c.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("write through the sentinels after the failover: %v", err)
	}
}

// TestPatientKeepsTheURL: Patient adds its timeouts to a plain and to a
// Sentinel URL, whose other settings stay.
func TestPatientKeepsTheURL(t *testing.T) {
	t.Parallel()
	plain, err := redis.ParseURL(Patient("redis://127.0.0.1:6379/2"))
	if err != nil || plain.Addr != "127.0.0.1:6379" || plain.DB != 2 || plain.ReadTimeout != 5*time.Second || plain.PoolTimeout != 5*time.Second {
		t.Errorf("plain: %+v, %v", plain, err)
	}
	failover, err := redis.ParseFailoverURL(Patient("redis://s1:26379/0?master_name=m&addr=s2:26379"))
	if err != nil || failover.MasterName != "m" || len(failover.SentinelAddrs) != 2 || failover.WriteTimeout != 5*time.Second {
		t.Errorf("sentinel: %+v, %v", failover, err)
	}
}
