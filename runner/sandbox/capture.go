package sandbox

// Capture is an io.Writer that keeps the first and the last bytes written to
// it and counts what fell in between, so a command may write any amount while
// the memory it costs stays fixed.
type Capture struct {
	headMax int
	head    []byte
	ring    []byte // the tail, written circularly once head is full
	past    int64  // bytes written past the head, kept or not
}

// NewCapture keeps at most limit bytes: half from the start, half from the end.
func NewCapture(limit int) *Capture {
	return &Capture{headMax: limit / 2, ring: make([]byte, 0, limit-limit/2)}
}

func (c *Capture) Write(p []byte) (int, error) {
	n := len(p)
	if room := c.headMax - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	size := cap(c.ring)
	if len(p) == 0 || size == 0 {
		c.past += int64(len(p))
		return n, nil
	}
	c.ring = c.ring[:size]
	if len(p) > size {
		// Everything before the last size bytes would be overwritten anyway.
		c.past += int64(len(p) - size)
		p = p[len(p)-size:]
	}
	for len(p) > 0 {
		k := copy(c.ring[c.past%int64(size):], p)
		c.past += int64(k)
		p = p[k:]
	}
	return n, nil
}

// Bytes returns the head followed by the tail, and how many bytes were
// dropped between them.
func (c *Capture) Bytes() ([]byte, int64) {
	size := int64(cap(c.ring))
	kept := min(c.past, size)
	out := make([]byte, 0, len(c.head)+int(kept))
	out = append(out, c.head...)
	switch {
	case c.past <= size:
		out = append(out, c.ring[:c.past]...)
	case size > 0:
		off := c.past % size
		out = append(out, c.ring[off:]...)
		out = append(out, c.ring[:off]...)
	}
	if len(out) == 0 {
		out = nil
	}
	return out, c.past - kept
}
