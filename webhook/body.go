package webhook

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
)

// DefaultBodyBudget bounds the bytes of request bodies held at once by
// every delivery in flight together: room for two of GitHub's largest
// payloads, or thousands of ordinary ones.
const DefaultBodyBudget = 64 << 20

// errBusy is a body that would take the bodies in flight over the budget.
var errBusy = errors.New("request bodies in flight exceed the budget")

// byteBudget counts the bytes held by bodies in flight. A body that would
// exceed it is refused at once rather than waited for: a client that never
// signs cannot make a real delivery queue behind it, only fail fast and be
// redelivered.
type byteBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes and reports whether they were within the budget.
func (b *byteBudget) take(n int64) bool {
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *byteBudget) give(n int64) { b.used.Add(-n) }

// readBody reads a body of length bytes (-1: unknown) from r, writing each
// piece to sink (the signature check and the digest) as it arrives. Every
// byte of the buffer is reserved from the budget before it is allocated,
// and held is what the caller gives back once done with body. A known
// length is allocated once; an unknown one grows by doubling, reserving
// the new buffer before the old is given back.
func (h *Handler) readBody(r io.Reader, length int64, sink io.Writer) (body []byte, held int64, err error) {
	if length >= 0 {
		if !h.budget.take(length) {
			return nil, 0, errBusy
		}
		body = make([]byte, length)
		_, err = io.ReadFull(io.TeeReader(r, sink), body)
		return body, length, err
	}
	const chunk = 64 << 10
	for {
		if len(body) == cap(body) {
			grown := int64(min(max(2*cap(body), chunk), MaxBody+1))
			if grown <= int64(cap(body)) {
				return body, held, &http.MaxBytesError{Limit: MaxBody}
			}
			if !h.budget.take(grown) {
				return body, held, errBusy
			}
			body = append(make([]byte, 0, grown), body...)
			h.budget.give(held)
			held = grown
		}
		n, err := r.Read(body[len(body):cap(body)])
		sink.Write(body[len(body) : len(body)+n])
		body = body[:len(body)+n]
		if errors.Is(err, io.EOF) {
			return body, held, nil
		}
		if err != nil {
			return body, held, err
		}
	}
}
