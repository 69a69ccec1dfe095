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
	stream string   // the lane's name when queued
	life   lifetime // a stream-ordered allocation or free, or an access
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

// intervals is the checker's memory: segments sorted by lo, disjoint,
// kept in chunks of at most maxChunk (a two-level B-tree), so that a
// change moves the segments of one or a few chunks, not all of them.
type intervals struct {
	chunks []*chunk // sorted, none empty
}

// chunk is a run of consecutive segments.
type chunk struct{ segs []segment }

// maxChunk is the most segments a chunk holds; a change that leaves more
// splits it into chunks of half as many.
const maxChunk = 128

// firstChunk returns the index of the first chunk whose last segment ends after lo.
func (m *intervals) firstChunk(lo uintptr) int {
	return sort.Search(len(m.chunks), func(i int) bool {
		segs := m.chunks[i].segs
		return segs[len(segs)-1].hi > lo
	})
}

// firstSeg returns the index of the first segment of segs that ends after lo.
func firstSeg(segs []segment, lo uintptr) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].hi > lo })
}

// conflict returns an earlier access to bytes of [a.lo, a.hi) that races
// with a, made by an operation that knows clock c, or nil. A stream-ordered
// free races with every access after it (streamcheck_lifetime.go).
func (m *intervals) conflict(a *accessRec, c vclock) (prev *accessRec, lo, hi uintptr) {
	for ci := m.firstChunk(a.lo); ci < len(m.chunks); ci++ {
		segs := m.chunks[ci].segs
		if segs[0].lo >= a.hi {
			break
		}
		for i := firstSeg(segs, a.lo); i < len(segs) && segs[i].lo < a.hi; i++ {
			s := &segs[i]
			lo, hi := max(s.lo, a.lo), min(s.hi, a.hi)
			if s.write != nil && (s.write.freedBlock() || !s.write.before(c)) {
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
	}
	return nil, 0, 0
}

// span returns the chunks [i, j) that a change of [lo, hi) touches: the
// ones with segments in it, or, where none has, one beside the range to
// take the new segments (none when there are no chunks).
func (m *intervals) span(lo, hi uintptr) (i, j int) {
	i = m.firstChunk(lo)
	j = i
	for j < len(m.chunks) && m.chunks[j].segs[0].lo < hi {
		j++
	}
	if i == j && len(m.chunks) > 0 { // in a gap between chunks, or past the last
		if i == len(m.chunks) {
			i--
		}
		j = i + 1
	}
	return i, j
}

// rewrite replaces the segments of chunks [i, j) by the ones f makes of
// them, splitting a chunk that grew past maxChunk.
func (m *intervals) rewrite(i, j int, f func([]segment) []segment) {
	var flat []segment
	if j-i == 1 {
		flat = m.chunks[i].segs // changed in place: one chunk's segments move, no more
	} else {
		for _, ch := range m.chunks[i:j] {
			flat = append(flat, ch.segs...)
		}
	}
	flat = f(flat)
	if j-i == 1 && len(flat) > 0 && len(flat) <= maxChunk {
		m.chunks[i].segs = flat
		return
	}
	var out []*chunk
	for len(flat) > maxChunk {
		out = append(out, &chunk{segs: append([]segment(nil), flat[:maxChunk/2]...)})
		flat = flat[maxChunk/2:]
	}
	if len(flat) > 0 {
		out = append(out, &chunk{segs: flat})
	}
	m.chunks = slices.Replace(m.chunks, i, j, out...)
}

// record remembers a, made by an operation that knows clock c, for every
// byte of its range; conflict must have found none.
func (m *intervals) record(a *accessRec, c vclock) {
	i, j := m.span(a.lo, a.hi)
	m.rewrite(i, j, func(segs []segment) []segment { return recordIn(segs, a, c) })
}

// recordRun remembers accesses run, sorted by address and disjoint (the
// rows of a pitched copy's side), made by one operation that knows clock
// c, in one pass over the segments they span: rows × log(segments) plus
// the segments spanned, where a row at a time would move the chunk's
// segments for every row.
func (m *intervals) recordRun(run []*accessRec, c vclock) {
	if len(run) == 1 {
		m.record(run[0], c)
		return
	}
	i, j := m.span(run[0].lo, run[len(run)-1].hi)
	m.rewrite(i, j, func(segs []segment) []segment { return recordRunIn(segs, run, c) })
}

// recordRunIn is recordRun on a sorted run of segments.
func recordRunIn(segs []segment, run []*accessRec, c vclock) []segment {
	out := make([]segment, 0, len(segs)+2*len(run))
	k := 0
	var rest *segment // the part of a segment past the last access, still to place
	next := func() (segment, bool) {
		if rest != nil {
			s := *rest
			rest = nil
			return s, true
		}
		if k < len(segs) {
			k++
			return segs[k-1], true
		}
		return segment{}, false
	}
	for _, a := range run {
		cur := a.lo
		for {
			s, ok := next()
			if !ok {
				break
			}
			if s.hi <= a.lo { // wholly before the access
				out = append(out, s)
				continue
			}
			if s.lo >= a.hi { // wholly after: the next access's, or the tail's
				rest = &s
				break
			}
			if s.lo < a.lo {
				out = append(out, segment{lo: s.lo, hi: a.lo, write: s.write, reads: s.reads})
				s.lo = a.lo
			}
			if s.lo > cur {
				out = append(out, updated(segment{lo: cur, hi: s.lo}, a, c))
			}
			mid := s
			mid.hi = min(s.hi, a.hi)
			out = append(out, updated(mid, a, c))
			cur = mid.hi
			if s.hi > a.hi {
				tail := segment{lo: a.hi, hi: s.hi, write: s.write, reads: s.reads}
				rest = &tail
				break
			}
		}
		if cur < a.hi {
			out = append(out, updated(segment{lo: cur, hi: a.hi}, a, c))
		}
	}
	for {
		s, ok := next()
		if !ok {
			break
		}
		out = append(out, s)
	}
	merged := out[:0]
	for _, s := range out {
		if n := len(merged); n > 0 && merged[n-1].hi == s.lo && merged[n-1].write == s.write && slices.Equal(merged[n-1].reads, s.reads) {
			merged[n-1].hi = s.hi
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// recordIn is record on a sorted run of segments: it returns the run with
// a remembered.
func recordIn(segs []segment, a *accessRec, c vclock) []segment {
	i := firstSeg(segs, a.lo)
	j := i
	for j < len(segs) && segs[j].lo < a.hi {
		j++
	}
	out := make([]segment, 0, j-i+4)
	if i > 0 { // the neighbour before, to merge with
		i--
		out = append(out, segs[i])
	}
	cur := a.lo
	for k := max(i, firstSeg(segs, a.lo)); k < j; k++ {
		s := segs[k]
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
	if j < len(segs) { // the neighbour after
		out = append(out, segs[j])
		j++
	}
	// Merge neighbours with the same history.
	merged := out[:1]
	for _, s := range out[1:] {
		last := &merged[len(merged)-1]
		if last.hi == s.lo && last.write == s.write && slices.Equal(last.reads, s.reads) {
			last.hi = s.hi
			continue
		}
		merged = append(merged, s)
	}
	return slices.Replace(segs, i, j, merged...)
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
	i, j := m.span(lo, hi)
	m.rewrite(i, j, func(segs []segment) []segment { return forgetIn(segs, lo, hi) })
}

// forgetIn is forget on a sorted run of segments.
func forgetIn(segs []segment, lo, hi uintptr) []segment {
	i := firstSeg(segs, lo)
	var out []segment
	j := i
	for ; j < len(segs) && segs[j].lo < hi; j++ {
		s := segs[j]
		if s.lo < lo {
			out = append(out, segment{lo: s.lo, hi: lo, write: s.write, reads: s.reads})
		}
		if s.hi > hi {
			out = append(out, segment{lo: hi, hi: s.hi, write: s.write, reads: s.reads})
		}
	}
	return slices.Replace(segs, i, j, out...)
}

// len returns the number of segments.
func (m *intervals) len() int {
	n := 0
	for _, ch := range m.chunks {
		n += len(ch.segs)
	}
	return n
}
