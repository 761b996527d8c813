package worker_test

import (
	"strings"
	"testing"

	"github.com/agentbot/agentbot/worker"
)

// A sandbox's worker is judged dead only by its lease: never itself, nor a
// worker of another deployment (its leases are in another Redis), nor a
// user of the engine that holds no lease (agentbot run, eval).
func TestLeasedWorkerAlive(t *testing.T) {
	t.Parallel()
	rdb := testRedis(t)
	leases, deployment := deploymentLeases(t, rdb)
	self, other, gone := worker.NewID(deployment), worker.NewID(deployment), worker.NewID(deployment)
	elsewhere := worker.NewID("another")
	if self == other || !strings.HasPrefix(self, worker.IDPrefix+deployment+"/") {
		t.Fatalf("worker ids %q and %q", self, other)
	}
	if err := leases.Hold(t.Context(), other, "other"); err != nil {
		t.Fatal(err)
	}
	alive := worker.Alive(self, deployment, leases)
	for _, tt := range []struct {
		id   string
		want bool
	}{
		{self, true},
		{other, true},
		{gone, false},
		{elsewhere, true},
		{"task-1234", true},
		{"eval-99", true},
	} {
		if got, err := alive(t.Context(), tt.id); err != nil || got != tt.want {
			t.Errorf("alive(%q) = %v, %v; want %v", tt.id, got, err, tt.want)
		}
	}
}
