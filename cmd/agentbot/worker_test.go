package main

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
)

// A sandbox's worker is judged dead only by its lease: never itself, never
// a user of the engine that holds no lease (agentbot run, eval).
func TestLeasedWorkerAlive(t *testing.T) {
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	leases := queue.NewWorkerLeases(rdb, 0)
	self, other, gone := newWorkerID(), newWorkerID(), newWorkerID()
	if self == other || !strings.HasPrefix(self, workerIDPrefix) {
		t.Fatalf("worker ids %q and %q", self, other)
	}
	if err := leases.Hold(t.Context(), other, "other"); err != nil {
		t.Fatal(err)
	}
	alive := leasedWorkerAlive(self, leases)
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{self, true},
		{other, true},
		{gone, false},
		{"task-1234", true},
		{"eval-99", true},
	} {
		if got, err := alive(t.Context(), tt.id); err != nil || got != tt.want {
			t.Errorf("alive(%q) = %v, %v; want %v", tt.id, got, err, tt.want)
		}
	}
}
