package queue

import (
	"os"
	"testing"

	"github.com/agentbot/agentbot/internal/ostest"
)

// Every test owns its redis-server and mostly waits on it: they run in
// parallel, more at once than there are cores.
func TestMain(m *testing.M) {
	ostest.MinParallel(8)
	os.Exit(m.Run())
}
