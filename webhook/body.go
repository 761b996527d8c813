package webhook

import (
	"errors"
	"io"
	"net/netip"
	"sync"
)

// DefaultBodyBudget bounds the bytes of request bodies held at once by
// every delivery in flight together: room for one of GitHub's largest
// payloads, or thousands of ordinary ones.
const DefaultBodyBudget = 64 << 20

// chunkSize is the piece a body is read in. Small enough that an ordinary
// delivery holds one, large enough that a 25 MiB one is a few hundred.
const chunkSize = 32 << 10

// headSize is the start of a body, where a command's payload fits (an
// issue_comment is about 16 KiB), that a peer may read beyond its fair
// share: see byteBudget.
const headSize = 2 * chunkSize

var (
	// errBusy is a body that would take the bodies in flight over the
	// budget.
	errBusy = errors.New("request bodies in flight exceed the budget")
	// errPeerShare is a body that would take its peer over its share.
	errPeerShare = errors.New("the bodies in flight from this address exceed its share of the budget")
)

// byteBudget counts the bytes held by bodies in flight, in total and by
// peer (the sender's address). A body that would exceed it is refused at
// once rather than waited for: a client that never signs cannot make a
// real delivery queue behind it.
//
// No peer may hold more than half of what the other peers leave free, so
// whatever some addresses hold, a new one finds half of the rest: three
// addresses that stall their bodies hold at most seven eighths of the
// budget between them, and GitHub's address, which is none of theirs,
// still has its delivery read. One peer alone may hold half of the budget,
// room for the largest payload.
//
// A body's head may go beyond its peer's fair share, up to a sixteenth of
// the budget for all the peer's heads, as long as an eighth of the budget
// stays free for the peers within theirs: a command shares its address
// with a stalled flood when both come through one proxy.
type byteBudget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	peers map[string]*peerHold // peers holding something, none else
	held  func(delta int64)    // told each change of used, for the metrics
}

// peerHold is what one peer's bodies hold.
type peerHold struct {
	bytes int64 // all its pieces
	heads int64 // those of its pieces in a body's first headSize bytes
}

func newByteBudget(limit int64, held func(delta int64)) *byteBudget {
	return &byteBudget{limit: limit, peers: map[string]*peerHold{}, held: held}
}

// take reserves n bytes for peer, head when they are in a body's first
// headSize bytes; it returns errBusy or errPeerShare when they are not
// within the budget.
func (b *byteBudget) take(peer string, n int64, head bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return errBusy
	}
	p := b.peers[peer]
	if p == nil {
		p = &peerHold{}
	}
	fair := 2*(p.bytes+n) <= b.limit-(b.used-p.bytes)
	beyond := head && p.heads+n <= b.limit/16 && b.used+n <= b.limit-b.limit/8
	if !fair && !beyond {
		return errPeerShare
	}
	b.peers[peer] = p
	p.bytes += n
	if head {
		p.heads += n
	}
	b.add(n)
	return nil
}

// force counts n bytes whatever the budget holds: the copy of a body whose
// signature holds, which only a holder of the secret can make and which
// doubles at most what the budget let in.
func (b *byteBudget) force(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(n)
}

// give returns what take (bytes, of which heads) and force (forced)
// reserved.
func (b *byteBudget) give(peer string, bytes, heads, forced int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.peers[peer]; p != nil {
		p.bytes -= bytes
		p.heads -= heads
		if p.bytes == 0 {
			delete(b.peers, peer)
		}
	}
	b.add(-bytes - forced)
}

func (b *byteBudget) add(n int64) {
	b.used += n
	b.held(n)
}

// peerOf returns the peer a request's bytes are counted under: its remote
// IP address, or for IPv6 the /64 it is in, which one host usually has
// whole.
func peerOf(remoteAddr string) string {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return remoteAddr // not a TCP peer (a test's or a pipe's): one peer
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64) // cannot fail for an IPv6 address
	return p.String()
}

// chunks recycles the pieces bodies are read into: a body that fails its
// signature check leaves no garbage behind, so a flood of them costs the
// budget and no more, whatever the collector's pace.
var chunks = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// body is a request body being read: its pieces, each reserved from the
// budget before it is taken.
type body struct {
	budget *byteBudget
	peer   string
	pieces []*[chunkSize]byte
	first  [512]byte // where a piece's first bytes are waited for
	n      int       // bytes read
	held   int64     // bytes reserved from the budget by take
	heads  int64     // of which in the body's head
	forced int64     // bytes counted by force
	ended  bool      // the body was read to its end
}

// readFrom reads r to its end into b's pieces, writing each piece to sink
// (the signature check and the digest) as it arrives. It stops with
// errBusy or errPeerShare as soon as the next piece would exceed the
// budget. A piece is taken once its first bytes have arrived: a connection
// that sends nothing more holds nothing.
func (b *body) readFrom(r io.Reader, sink io.Writer) error {
	for {
		n, err := r.Read(b.first[:])
		if n == 0 {
			switch {
			case errors.Is(err, io.EOF):
				b.ended = true
				return nil
			case err != nil:
				return err
			}
			continue
		}
		head := b.n < headSize
		if err := b.budget.take(b.peer, chunkSize, head); err != nil {
			return err
		}
		b.held += chunkSize
		if head {
			b.heads += chunkSize
		}
		p := chunks.Get().(*[chunkSize]byte)
		b.pieces = append(b.pieces, p)
		copy(p[:], b.first[:n])
		if err == nil {
			var m int
			m, err = io.ReadFull(r, p[n:])
			n += m
		}
		sink.Write(p[:n])
		b.n += n
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			b.ended = true
			return nil // the body ended in this piece
		case err != nil:
			return err
		}
	}
}

// bytes returns the body in one slice, for a body found authentic; the
// copy is counted in the budget until release.
func (b *body) bytes() []byte {
	b.budget.force(int64(b.n))
	b.forced += int64(b.n)
	out := make([]byte, 0, b.n)
	for _, p := range b.pieces {
		out = append(out, p[:min(chunkSize, b.n-len(out))]...)
	}
	return out
}

// release recycles the pieces and gives their bytes, and the copy's, back
// to the budget: call it once the answer no longer reads the body.
func (b *body) release() {
	for _, p := range b.pieces {
		chunks.Put(p)
	}
	b.pieces = nil
	b.budget.give(b.peer, b.held, b.heads, b.forced)
	b.held, b.heads, b.forced = 0, 0, 0
}
