package worker_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/agentbot/agentbot/queue"
	"github.com/agentbot/agentbot/queue/redistest"
)

// testRedis connects to a private redis-server for the test.
func testRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb, err := queue.Connect(redistest.Start(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// deploymentLeases returns the worker leases in rdb and the deployment
// they belong to.
func deploymentLeases(t *testing.T, rdb redis.UniversalClient) (*queue.WorkerLeases, string) {
	t.Helper()
	leases := queue.NewWorkerLeases(rdb, 0)
	deployment, err := leases.Deployment(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return leases, deployment
}
