package queue

import (
	"sync"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
)

func TestClaimBody(t *testing.T) {
	ctx := t.Context()
	srv := redistest.Start(t)
	rdb := connect(t, srv)
	c := NewClient(rdb)
	const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

	if first, err := c.ClaimBody(ctx, digest, "d1"); err != nil || first != "d1" {
		t.Fatalf("first claim = %q, %v; want d1", first, err)
	}
	// GitHub's redelivery carries the same id: it is still the first.
	if first, err := c.ClaimBody(ctx, digest, "d1"); err != nil || first != "d1" {
		t.Fatalf("redelivery's claim = %q, %v; want d1", first, err)
	}
	// A replay under a new delivery id learns who was first.
	if first, err := c.ClaimBody(ctx, digest, "d2"); err != nil || first != "d1" {
		t.Fatalf("replay's claim = %q, %v; want d1", first, err)
	}
	ttl, err := rdb.TTL(ctx, bodyKey(digest)).Result()
	if err != nil || ttl < DeliveryTTL-time.Minute || ttl > DeliveryTTL {
		t.Errorf("body kept for %v (%v); want %v", ttl, err, DeliveryTTL)
	}

	// Concurrent replays of a fresh body: exactly one is first.
	const n = 16
	firsts := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := string(rune('a' + i))
			first, err := c.ClaimBody(ctx, "other", id)
			if err != nil {
				t.Error(err)
			}
			if first == id {
				firsts <- id
			}
		})
	}
	wg.Wait()
	close(firsts)
	if len(firsts) != 1 {
		t.Errorf("%d concurrent claims were first; want 1", len(firsts))
	}

	srv.Stop()
	if _, err := c.ClaimBody(ctx, digest, "d3"); err == nil {
		t.Error("ClaimBody with Redis down succeeded")
	}
}
