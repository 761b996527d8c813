package github

import (
	"context"
	"sync"
)

// Delivery is one webhook the simulator sent, and how it was answered.
type Delivery struct {
	GUID   string // X-GitHub-Delivery
	URL    string
	Event  string
	Action string
	Status int   // 0 when the request failed
	Err    error // why it failed
}

// outbox delivers, in order and off the request path, the webhooks the
// App's own API writes cause. It has its own lock so that handlers may
// queue while holding s.mu, which deliveries themselves need.
type outbox struct {
	mu      sync.Mutex
	url     string
	pending []outgoing
	wake    chan struct{} // one token: work is pending
	done    chan struct{} // closed when the worker exits
	closed  bool
}

type outgoing struct {
	url, event string
	payload    obj
}

func newOutbox() *outbox {
	return &outbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// SetWebhookURL makes the simulator deliver to url, as GitHub does, the
// events the App's own writes cause: issue_comment "created" and
// "edited" for its comments, pull_request "opened" for its pull requests
// and "synchronize" when its push moves an open pull request's head, so
// that a test sees whether agentbot ignores its own echo. "" stops it. Deliveries are sequential and in order; Close waits
// for the queued ones. (A converted manifest records its hook URL in
// App().HookURL but does not turn this on: a test's manifest often names
// a host that does not exist.)
func (s *Server) SetWebhookURL(url string) {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	s.out.url = url
}

// echo queues event for the webhook URL, if one is set.
func (s *Server) echo(event string, payload obj) {
	o := s.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.url == "" || o.closed {
		return
	}
	o.pending = append(o.pending, outgoing{url: o.url, event: event, payload: payload})
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// deliverQueued runs until the outbox is closed and drained.
func (s *Server) deliverQueued() {
	o := s.out
	defer close(o.done)
	for {
		o.mu.Lock()
		batch, closed := o.pending, o.closed
		o.pending = nil
		o.mu.Unlock()
		for _, m := range batch {
			// The outcome is kept in Deliveries; there is nobody to return it to.
			_, _ = s.Deliver(context.Background(), m.url, m.event, m.payload)
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) == 0 {
			<-o.wake
		}
	}
}

// closeOutbox stops queueing and waits for what is queued to be sent.
func (s *Server) closeOutbox() {
	s.out.mu.Lock()
	s.out.closed = true
	s.out.mu.Unlock()
	select {
	case s.out.wake <- struct{}{}:
	default:
	}
	<-s.out.done
}

// Deliveries returns every webhook sent so far, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}
