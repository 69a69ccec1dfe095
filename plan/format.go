package plan

import (
	"fmt"
	"strings"
)

// goChunks is how many chunks GoString writes out; a plan may have up to
// MaxChunks of them.
const goChunks = 4

// String is Explain: what the plan is and why, in one line, however many
// chunks it has.
func (p Plan) String() string { return p.Explain() }

// GoString is %#v's Go syntax with the chunks after the first few counted
// in a comment: a plan may have a million of them.
func (p Plan) GoString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan.Plan{Method:%q, Shape:%#v, SliceDim:%d, DType:%#v, Available:%d, Overhead:%#v, MaxSlices:%d, Chunks:",
		p.Method, p.Shape, p.SliceDim, p.DType, p.Available, p.Overhead, p.MaxSlices)
	if p.Chunks == nil {
		b.WriteString("[]plan.Chunk(nil)")
	} else {
		b.WriteString("[]plan.Chunk{")
		for i, c := range p.Chunks[:min(len(p.Chunks), goChunks)] {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "{Start:%d, Len:%d}", c.Start, c.Len)
		}
		if n := len(p.Chunks) - goChunks; n > 0 {
			fmt.Fprintf(&b, ", /* %d more, %d in all */", n, len(p.Chunks))
		}
		b.WriteString("}")
	}
	fmt.Fprintf(&b, ", OutDType:%#v, Raw:%t, Terms:%#v}", p.OutDType, p.Raw, p.Terms)
	return b.String()
}

// String lists the registered methods: "plan registry: fbp.filter,
// identity (2 methods)".
func (r *Registry) String() string {
	if r == nil {
		return "plan registry <nil>"
	}
	names := r.Names()
	if len(names) == 0 {
		return "plan registry: no methods"
	}
	return fmt.Sprintf("plan registry: %s (%d methods)", strings.Join(names, ", "), len(names))
}

// GoString is String in fmt's form of a pointer, for %#v.
func (r *Registry) GoString() string {
	if r == nil {
		return "(*plan.Registry)(nil)"
	}
	return fmt.Sprintf("(*plan.Registry)(%p) /* %s */", r, r.String())
}
