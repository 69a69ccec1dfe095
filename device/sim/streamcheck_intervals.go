package sim

import (
	"slices"
	"sort"
)

// streamcheck_intervals.go: what the stream race checker remembers of
// memory. Byte ranges (device memory, mapped and page-locked host memory:
// one address space) are kept as sorted, disjoint segments, each with the
// last operation that wrote it and the operations that read it since,
// none of which is ordered before another. A segment is split where an
// access starts or ends inside it, and neighbours with the same history
// are merged again, so a buffer that streams use whole is one segment
// whatever its size.
//
// Memory: a segment is 64 bytes (two addresses, a pointer, a slice
// header) plus 8 bytes per remembered reader; each operation's record
// (its kind, lane, tick and the program counters of its caller's stack)
// is shared by every segment it touched. With an operation per range,
// about 200 bytes a range (BenchmarkStreamCheck, docs/perf.md).

// opRecord is one operation as the checker saw it queued.
type opRecord struct {
	kind   string // "copy HtoD", "memset", "kernel", "free", ...
	lane   *lane
	tick   uint32 // the operation's entry in its lane's clock
	pcs    []uintptr
	stream string // the lane's name when queued
}

// accessRec is one range one operation touched.
type accessRec struct {
	op     *opRecord
	lo, hi uintptr
	write  bool
}

// before reports whether a's operation is ordered before an operation
// that knows clock c.
func (a *accessRec) before(c vclock) bool { return a.op.tick <= c.get(a.op.lane.id) }

// segment is a byte range [lo, hi) with one history.
type segment struct {
	lo, hi uintptr
	write  *accessRec   // the last write, nil if none
	reads  []*accessRec // reads since, none ordered before another
}

// intervals is the checker's memory: segments sorted by lo, disjoint.
type intervals struct {
	segs []segment
}

// first returns the index of the first segment that ends after lo.
func (m *intervals) first(lo uintptr) int {
	return sort.Search(len(m.segs), func(i int) bool { return m.segs[i].hi > lo })
}

// conflict returns an earlier access to bytes of [a.lo, a.hi) that races
// with a, made by an operation that knows clock c, or nil.
func (m *intervals) conflict(a *accessRec, c vclock) (prev *accessRec, lo, hi uintptr) {
	for i := m.first(a.lo); i < len(m.segs) && m.segs[i].lo < a.hi; i++ {
		s := &m.segs[i]
		lo, hi := max(s.lo, a.lo), min(s.hi, a.hi)
		if s.write != nil && !s.write.before(c) {
			return s.write, lo, hi
		}
		if a.write {
			for _, r := range s.reads {
				if !r.before(c) {
					return r, lo, hi
				}
			}
		}
	}
	return nil, 0, 0
}

// record remembers a, made by an operation that knows clock c, for every
// byte of its range; conflict must have found none.
func (m *intervals) record(a *accessRec, c vclock) {
	i := m.first(a.lo)
	j := i
	for j < len(m.segs) && m.segs[j].lo < a.hi {
		j++
	}
	out := make([]segment, 0, j-i+2)
	cur := a.lo
	for k := i; k < j; k++ {
		s := m.segs[k]
		if s.lo < a.lo { // the part before the access keeps its history
			out = append(out, segment{lo: s.lo, hi: a.lo, write: s.write, reads: s.reads})
			s.lo = a.lo
		}
		if s.lo > cur { // a gap nothing touched yet
			out = append(out, updated(segment{lo: cur, hi: s.lo}, a, c))
		}
		mid := s
		mid.hi = min(s.hi, a.hi)
		out = append(out, updated(mid, a, c))
		if s.hi > a.hi { // the part after keeps its history
			out = append(out, segment{lo: a.hi, hi: s.hi, write: s.write, reads: s.reads})
		}
		cur = mid.hi
	}
	if cur < a.hi {
		out = append(out, updated(segment{lo: cur, hi: a.hi}, a, c))
	}
	// Merge neighbours with the same history, the ones beside the range too.
	if i > 0 {
		i--
		out = append([]segment{m.segs[i]}, out...)
	}
	if j < len(m.segs) {
		out = append(out, m.segs[j])
		j++
	}
	merged := out[:1]
	for _, s := range out[1:] {
		last := &merged[len(merged)-1]
		if last.hi == s.lo && last.write == s.write && slices.Equal(last.reads, s.reads) {
			last.hi = s.hi
			continue
		}
		merged = append(merged, s)
	}
	m.segs = slices.Replace(m.segs, i, j, merged...)
}

// updated returns s's history after access a by an operation that knows c.
func updated(s segment, a *accessRec, c vclock) segment {
	if a.write {
		s.write, s.reads = a, nil
		return s
	}
	reads := make([]*accessRec, 0, len(s.reads)+1)
	for _, r := range s.reads {
		if !r.before(c) { // a read ordered before a is covered by a
			reads = append(reads, r)
		}
	}
	s.reads = append(reads, a)
	return s
}

// forget drops the history of [lo, hi): memory that was freed.
func (m *intervals) forget(lo, hi uintptr) {
	i := m.first(lo)
	var out []segment
	j := i
	for ; j < len(m.segs) && m.segs[j].lo < hi; j++ {
		s := m.segs[j]
		if s.lo < lo {
			out = append(out, segment{lo: s.lo, hi: lo, write: s.write, reads: s.reads})
		}
		if s.hi > hi {
			out = append(out, segment{lo: hi, hi: s.hi, write: s.write, reads: s.reads})
		}
	}
	m.segs = slices.Replace(m.segs, i, j, out...)
}
