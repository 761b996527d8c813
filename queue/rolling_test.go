package queue

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbot/agentbot/queue/redistest"
	"github.com/agentbot/agentbot/webhook"
)

// TestRollingRestartOfTheIntakeLosesNoDelivery sends 100 webhooks a second
// to two intakes sharing one Redis, round robin, and shuts one down
// gracefully mid-load, as a rolling restart does; the balancer takes it out
// of rotation 200ms later, as endpoints lag behind a pod's termination. A
// delivery that finds it gone is sent again to the other, as GitHub's
// redelivery would. Every delivery answered 2xx must be queued.
func TestRollingRestartOfTheIntakeLosesNoDelivery(t *testing.T) {
	ctx := t.Context()
	rdb := connect(t, redistest.Start(t))
	q := NewClient(rdb)
	type intake struct {
		srv  *http.Server
		base string
	}
	intakes := make([]intake, 2)
	serveErr := make(chan error, 2)
	for i := range intakes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		intakes[i] = intake{srv: &http.Server{Handler: newIntakeHandler(t, q)}, base: "http://" + l.Addr().String()}
		go func() { serveErr <- intakes[i].srv.Serve(l) }()
		t.Cleanup(func() { intakes[i].srv.Close() })
	}

	var draining atomic.Bool // intake 0 is out of the balancer's rotation
	client := &http.Client{Timeout: 5 * time.Second}
	const rate, seconds = 100, 3
	var (
		mu       sync.Mutex
		answered = map[string]int{} // delivery → its 2xx status
		resent   int
		wg       sync.WaitGroup
	)
	send := func(i int) {
		defer wg.Done()
		delivery := fmt.Sprintf("d-%04d", i)
		target := i % 2
		if draining.Load() {
			target = 1
		}
		for attempt := 0; attempt < 5; attempt++ {
			status := deliver(ctx, client, intakes[target].base, delivery)
			if status == http.StatusAccepted || status == http.StatusOK {
				mu.Lock()
				answered[delivery] = status
				mu.Unlock()
				return
			}
			if status != 0 && status != http.StatusServiceUnavailable {
				t.Errorf("delivery %s answered %d", delivery, status)
				return
			}
			mu.Lock()
			resent++
			mu.Unlock()
			target = 1 // the restarted intake is gone; the other answers
		}
		t.Errorf("delivery %s unanswered after 5 attempts", delivery)
	}

	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	shutdown := make(chan error, 1)
	for i := range rate * seconds {
		<-tick.C
		if i == rate+rate/5 {
			draining.Store(true)
		}
		if i == rate { // one second in
			go func() {
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				shutdown <- intakes[0].srv.Shutdown(sctx)
			}()
		}
		wg.Add(1)
		go send(i)
	}
	wg.Wait()
	if err := <-shutdown; err != nil {
		t.Fatalf("graceful shutdown of intake 0: %v", err)
	}
	if err := <-serveErr; err != http.ErrServerClosed {
		t.Fatalf("intake 0 stopped serving with %v; want http.ErrServerClosed", err)
	}

	t.Logf("%d deliveries answered 2xx, %d sent again to the other intake", len(answered), resent)
	if len(answered) != rate*seconds {
		t.Errorf("%d of %d deliveries answered 2xx", len(answered), rate*seconds)
	}
	store := NewStore(rdb)
	for delivery := range answered {
		if _, err := store.Task(ctx, webhook.TaskID(delivery)); err != nil {
			t.Errorf("delivery %s answered 2xx, but its task: %v", delivery, err)
		}
	}
	if n := pendingTasks(t, rdb); n != rate*seconds {
		t.Errorf("%d tasks queued; want %d, one per delivery", n, rate*seconds)
	}
}
