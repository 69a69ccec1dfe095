package pool

import (
	"fmt"

	"github.com/cuarray/cuarray/accounting"
)

// String describes the pool in a line without waiting for its lock (held
// while the device allocates or frees) or calling the device: "pool on
// sim:0: 1.00 MiB in use in 2 blocks, 2.00 MiB reserved in 1 segment",
// with its limit, "busy" while another call holds it, and "device closed"
// or "failed" where they apply. Stats has the figures.
func (p *Pool) String() string {
	if p.valid() != nil {
		return "pool <nil>"
	}
	s := "pool on " + p.dev.DeviceID().String()
	if p.closed() {
		return s + " (device closed)"
	}
	if !p.mu.TryLock() {
		return s + " (busy)"
	}
	st, live, limit, failed := p.st, p.liveBlocks, p.limit, p.failed
	p.mu.Unlock()
	s += fmt.Sprintf(": %s in use in %d %s, %s reserved in %d %s", accounting.FormatBytes(st.InUse), live, plural(live, "block"),
		accounting.FormatBytes(st.Reserved), st.Segments, plural(st.Segments, "segment"))
	if limit > 0 {
		s += ", limit " + accounting.FormatBytes(limit)
	}
	if failed != nil {
		s += " (failed)"
	}
	return s
}

// GoString is String in fmt's form of a pointer, for %#v:
// "(*pool.Pool)(0xc000123400) /* pool on sim:0: ... */".
func (p *Pool) GoString() string {
	if p == nil {
		return "(*pool.Pool)(nil)"
	}
	return fmt.Sprintf("(*pool.Pool)(%p) /* %s */", p, p.String())
}

func plural(n int, one string) string {
	if n == 1 {
		return one
	}
	return one + "s"
}
