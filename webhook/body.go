package webhook

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
)

// DefaultBodyBudget bounds the bytes of request bodies held at once by
// every delivery in flight together: room for one of GitHub's largest
// payloads, or thousands of ordinary ones.
const DefaultBodyBudget = 64 << 20

// chunkSize is the piece a body is read in. Small enough that an ordinary
// delivery holds one, large enough that a 25 MiB one is a few hundred.
const chunkSize = 32 << 10

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

// chunks recycles the pieces bodies are read into: a body that fails its
// signature check leaves no garbage behind, so a flood of them costs the
// budget and no more, whatever the collector's pace.
var chunks = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// body is a request body being read: its pieces, each reserved from the
// budget before it is taken.
type body struct {
	budget *byteBudget
	pieces []*[chunkSize]byte
	n      int   // bytes read
	held   int64 // bytes reserved from the budget
}

// readFrom reads r to its end into b's pieces, writing each piece to sink
// (the signature check and the digest) as it arrives. It stops with
// errBusy as soon as the next piece would exceed the budget.
func (b *body) readFrom(r io.Reader, sink io.Writer) error {
	for {
		if !b.budget.take(chunkSize) {
			return errBusy
		}
		b.held += chunkSize
		p := chunks.Get().(*[chunkSize]byte)
		b.pieces = append(b.pieces, p)
		n, err := io.ReadFull(r, p[:])
		sink.Write(p[:n])
		b.n += n
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil // the body ended in this piece
		case err != nil:
			return err
		}
	}
}

// bytes returns the body in one slice, for a body found authentic: the
// copy is reserved from the budget too (errBusy otherwise).
func (b *body) bytes() ([]byte, error) {
	if !b.budget.take(int64(b.n)) {
		return nil, errBusy
	}
	b.held += int64(b.n)
	out := make([]byte, 0, b.n)
	for _, p := range b.pieces {
		out = append(out, p[:min(chunkSize, b.n-len(out))]...)
	}
	return out, nil
}

// release recycles the pieces and gives their bytes, and the copy's, back
// to the budget: call it once the answer no longer reads the body.
func (b *body) release() {
	for _, p := range b.pieces {
		chunks.Put(p)
	}
	b.pieces = nil
	b.budget.give(b.held)
	b.held = 0
}
