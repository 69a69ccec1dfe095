package accounting

import (
	"bufio"
	"fmt"
	"io"
	"math"
)

// WriteTo writes the log in the format ReadLog reads (version 1): what a
// tool that edits a log (cuts it, scales it) uses to save the result. The
// scopes are written first, each segment mark just after its allocation.
// An event that refers to an allocation not in the log or to a scope not
// in it, a second free of an allocation or one as another kind, a
// negative size, or a time before the previous event's is an error
// wrapping ErrBadLog; what was written before it stays written. Streams
// are numbered again in the order of their first use, as ReadLog wants
// them (a log cut from a longer one can start with its third stream).
func (g *Log) WriteTo(w io.Writer) (int64, error) {
	if g == nil || w == nil {
		return 0, fmt.Errorf("accounting: write log: %w", ErrNil)
	}
	cw := &countWriter{w: w}
	bw := bufio.NewWriter(cw)
	b := appendLogHeader(nil, g.Name, g.Start)
	for i, s := range g.Scopes {
		if s.Parent < 0 || s.Parent > i {
			return cw.n, fmt.Errorf("accounting: write log: scope %d's parent %d: %w", i+1, s.Parent, ErrBadLog)
		}
		b = append(b, byte(logScope))
		b = appendUvarint(b, uint64(s.Parent))
		b = appendUvarint(b, uint64(len(s.Name)))
		b = append(b, s.Name...)
	}
	st := &logWriteState{streams: map[int]uint64{}, marks: []allocMark{{}}}
	var err error
	for i, e := range g.Events {
		if b, err = g.appendEvent(b, i, e, st); err != nil {
			break
		}
		if len(b) >= 4<<10 {
			if _, err = bw.Write(b); err != nil {
				break
			}
			b = b[:0]
		}
	}
	if err == nil {
		_, err = bw.Write(b)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return cw.n, err
}

// logWriteState is what WriteTo keeps between events: the previous
// event's time, the streams numbered so far, and each allocation's kind
// and whether it was freed (marks[id]; marks[0] unused).
type logWriteState struct {
	last    int64
	streams map[int]uint64
	marks   []allocMark
}

// allocMark is what a free of an allocation must agree with.
type allocMark struct {
	kind  Kind
	block bool
	freed bool
}

// appendEvent appends event i.
func (g *Log) appendEvent(b []byte, i int, e LogEvent, st *logWriteState) ([]byte, error) {
	bad := func(why string, args ...any) ([]byte, error) {
		return b, fmt.Errorf("accounting: write log: event %d: %s: %w", i, fmt.Sprintf(why, args...), ErrBadLog)
	}
	var op logOp
	switch e.Op {
	case OpAlloc:
		op = logAlloc
	case OpFree:
		op = logFree
	case OpFailed:
		op = logFailed
	default:
		return bad("op %v", e.Op)
	}
	switch {
	case e.Kind >= NumKinds:
		return bad("kind %v", e.Kind)
	case e.Bytes < 0:
		return bad("size %d", e.Bytes)
	case int64(e.At) < st.last:
		return bad("time %v before the previous event's", e.At)
	case e.Scope < 0 || e.Scope > len(g.Scopes):
		return bad("scope %d of %d", e.Scope, len(g.Scopes))
	case e.Stream < 0 || e.Stream > math.MaxInt32:
		return bad("stream %d", e.Stream)
	case e.Op == OpFailed && e.Block:
		return bad("a failed allocation marked as a block")
	}
	var stream uint64
	if e.Stream > 0 {
		var ok bool
		if stream, ok = st.streams[e.Stream]; !ok {
			stream = uint64(len(st.streams) + 1)
			st.streams[e.Stream] = stream
		}
	}
	allocs := len(st.marks) - 1
	switch e.Op {
	case OpAlloc:
		if e.ID != allocs+1 {
			return bad("allocation id %d; the log's allocation %d", e.ID, allocs+1)
		}
		if e.Segment && e.Block {
			return bad("a block marked as a segment")
		}
	case OpFree:
		if e.ID < 0 || e.ID > allocs {
			return bad("free of allocation %d of %d", e.ID, allocs)
		}
		if m := st.marks[e.ID]; e.ID > 0 && (m.freed || m.kind != e.Kind || m.block != e.Block) {
			return bad("free of allocation %d (%v, block %v, freed before %v) as %v, block %v", e.ID, m.kind, m.block, m.freed, e.Kind, e.Block)
		}
	}
	tag := byte(op)
	if stream > 0 {
		tag |= tagStream
	}
	if e.Block {
		tag |= tagBlock
	}
	b = appendTag(b, tag, e.Kind)
	b = appendUvarint(b, uint64(int64(e.At)-st.last))
	st.last = int64(e.At)
	switch e.Op {
	case OpAlloc:
		st.marks = append(st.marks, allocMark{kind: e.Kind, block: e.Block})
		b = appendUvarint(b, uint64(e.Bytes))
	case OpFailed:
		b = appendUvarint(b, uint64(e.Bytes))
	case OpFree:
		if e.ID == 0 {
			b = appendUvarint(b, 0)
			b = appendUvarint(b, uint64(e.Bytes))
		} else {
			st.marks[e.ID].freed = true
			b = appendUvarint(b, uint64(allocs-e.ID+1))
		}
	}
	b = appendUvarint(b, uint64(e.Scope))
	if stream > 0 {
		b = appendUvarint(b, stream)
	}
	if e.Op == OpAlloc && e.Segment {
		b = appendTag(b, byte(logSegment), e.Kind)
		b = appendUvarint(b, 1)
	}
	return b, nil
}
