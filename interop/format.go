package interop

import "fmt"

// String says how much work the Pending remembers: "pending device work:
// 3 queued"; it reads a counter, never the list.
func (p *Pending) String() string {
	if p == nil {
		return "pending device work <nil>"
	}
	return fmt.Sprintf("pending device work: %d queued", p.count.Load())
}

// GoString is String in fmt's form of a pointer, for %#v.
func (p *Pending) GoString() string {
	if p == nil {
		return "(*interop.Pending)(nil)"
	}
	return fmt.Sprintf("(*interop.Pending)(%p) /* %s */", p, p.String())
}
