package accounting

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// ErrBadLog is returned by ReadLog for input that is not an allocation log
// it can read: another file, a later version, a truncated or damaged log.
var ErrBadLog = errors.New("not a valid allocation log")

// Log is an allocation log read by ReadLog.
type Log struct {
	Version int
	Name    string    // the ledger's name: the device, "sim:0"
	Start   time.Time // when the recording began (wall clock)
	Events  []LogEvent
	Scopes  []LogScope // LogEvent.Scope i is Scopes[i-1]
	Streams int        // the streams the events name, numbered 1 to Streams
}

// LogScope is a scope named in a log.
type LogScope struct {
	Name   string
	Parent int // the scope around it (0: none)
}

// LogEvent is one allocation, free or failed allocation of a log.
type LogEvent struct {
	Op    Op // OpAlloc, OpFree or OpFailed
	Kind  Kind
	Bytes int64         // the size: a free's is its allocation's
	At    time.Duration // since the recording began
	// ID numbers the allocations from 1 in the order of the log; a free
	// carries its allocation's, or 0 for one allocated before the
	// recording began. Failures have none.
	ID     int
	Scope  int  // the innermost scope (0: none); see ScopeName
	Stream int  // numbered from 1 in the order of first use; 0: the default stream or not known
	Block  bool // a caching allocator's block: what the program asked for
	// Segment is set on an allocation (and its free) that a caching
	// allocator took from the device to cut Blocks from.
	Segment bool
}

// ScopeName returns scope i's name with the names of the scopes around
// it, outermost first, joined by "/"; "" for 0 or an unknown scope.
func (g *Log) ScopeName(i int) string {
	var parts []string
	for n := 0; i > 0 && i <= len(g.Scopes) && n <= len(g.Scopes); n++ {
		parts = append(parts, g.Scopes[i-1].Name)
		i = g.Scopes[i-1].Parent
	}
	for a, b := 0, len(parts)-1; a < b; a, b = a+1, b-1 {
		parts[a], parts[b] = parts[b], parts[a]
	}
	return strings.Join(parts, "/")
}

// Peak returns the most bytes of kind k the log had in use at once as the
// ledger counted them (allocations and segments, blocks left out), counted
// from zero at the start of the recording. A peak past int64 is
// math.MaxInt64.
func (g *Log) Peak(k Kind) int64 {
	var cur, peak int64
	for _, e := range g.Events {
		if e.Kind != k || e.Block {
			continue
		}
		switch e.Op {
		case OpAlloc:
			if cur > math.MaxInt64-e.Bytes {
				return math.MaxInt64 // past what int64 counts: more than any device has
			}
			cur += e.Bytes
			peak = max(peak, cur)
		case OpFree: // of an allocation before the recording too: below zero, saturating
			if cur < math.MinInt64+e.Bytes {
				cur = math.MinInt64
			} else {
				cur -= e.Bytes
			}
		}
	}
	return peak
}

// maxLogName bounds the names (the ledger's, scopes') in a log.
const maxLogName = 1 << 16

// ReadLog reads an allocation log that a Recording wrote (Ledger.Record).
// Bad input gives an error wrapping ErrBadLog that says where.
//
// The format, version 2, is binary; every integer is a varint as
// encoding/binary writes it (uvarint unless said). The header is the
// magic "CUALLOG", the version byte, the ledger's name (uvarint length,
// bytes) and the start time (varint Unix nanoseconds). Records follow to
// the end, each a tag byte: bits 0–2 the record's type, bits 3–5 the
// memory Kind (7: the Kind is the byte after the tag; in version 1, which
// ReadLog reads too, 7 is IPC and no byte follows), bit 6 set when the record ends with a stream number, bit 7
// set for a caching allocator's block. dt is the nanoseconds since the
// previous event; scope is the innermost scope's number (0: none); a ref
// is the number of allocations in the log up to the one meant, counting
// back from the latest (1: the latest).
//
//	1 alloc:   dt, bytes, scope [, stream]            the allocation's id is its number among the allocs
//	2 free:    dt, ref (0: not in the log, then bytes), scope [, stream]
//	3 failed:  dt, bytes, scope [, stream]            an allocation refused by a limit or the device
//	4 scope:   parent, name (length, bytes)           the scopes are numbered 1, 2, ... in order
//	5 segment: ref                                    that allocation is a caching allocator's segment
//
// An allocation takes 5 to 10 bytes, a free 4 to 8: more when the time
// steps between events are long.
func ReadLog(r io.Reader) (*Log, error) {
	if r == nil {
		return nil, fmt.Errorf("accounting: read log: %w", ErrNil)
	}
	lr := &logReader{r: bufio.NewReader(r)}
	g, err := lr.read()
	if err != nil {
		return nil, err
	}
	return g, nil
}

// logReader reads a log, keeping its place for error messages.
type logReader struct {
	r   *bufio.Reader
	off int64
	err error
	g   Log

	allocAt []int // an allocation id's index in g.Events (index 0 unused)
	freeAt  []int // the index of its free, or -1
}

func (lr *logReader) ReadByte() (byte, error) {
	c, err := lr.r.ReadByte()
	if err == nil {
		lr.off++
	}
	return c, err
}

// fail records the first error, saying where.
func (lr *logReader) fail(format string, args ...any) {
	if lr.err == nil {
		lr.err = fmt.Errorf("accounting: read log: byte %d: %s: %w", lr.off, fmt.Sprintf(format, args...), ErrBadLog)
	}
}

// uvarint reads a uvarint; what names it for an error.
func (lr *logReader) uvarint(what string) uint64 {
	if lr.err != nil {
		return 0
	}
	x, err := binary.ReadUvarint(lr)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		lr.fail("%s: %v", what, err)
	}
	return x
}

// int63 reads a uvarint that must fit an int64.
func (lr *logReader) int63(what string) int64 {
	x := lr.uvarint(what)
	if x > math.MaxInt64 {
		lr.fail("%s %d is too large", what, x)
		return 0
	}
	return int64(x)
}

// name reads a length and that many bytes.
func (lr *logReader) name(what string) string {
	n := lr.uvarint(what + " length")
	if lr.err != nil {
		return ""
	}
	if n > maxLogName {
		lr.fail("%s of %d bytes is longer than %d", what, n, maxLogName)
		return ""
	}
	b := make([]byte, n)
	k, err := io.ReadFull(lr.r, b)
	lr.off += int64(k)
	if err != nil {
		lr.fail("%s: %v", what, io.ErrUnexpectedEOF)
	}
	return string(b)
}

func (lr *logReader) read() (*Log, error) {
	magic := make([]byte, len(logMagic)+1)
	k, err := io.ReadFull(lr.r, magic)
	lr.off += int64(k)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("accounting: read log: %w", err) // the reader's failure (a directory), not the log's
	}
	if err != nil || string(magic[:len(logMagic)]) != logMagic {
		return nil, fmt.Errorf("accounting: read log: no %q header: %w", logMagic, ErrBadLog)
	}
	v := magic[len(logMagic)]
	if v != 1 && v != LogVersion {
		return nil, fmt.Errorf("accounting: read log: version %d; this build reads versions 1 and %d: %w", v, LogVersion, ErrBadLog)
	}
	lr.g.Version = int(v)
	lr.g.Name = lr.name("ledger name")
	start, err := binary.ReadVarint(lr)
	if err != nil && lr.err == nil {
		lr.fail("start time: %v", io.ErrUnexpectedEOF)
	}
	lr.g.Start = time.Unix(0, start)
	lr.allocAt, lr.freeAt = []int{-1}, []int{-1}
	var at time.Duration
	for lr.err == nil {
		tag, err := lr.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			lr.fail("%v", err)
			break
		}
		lr.record(tag, &at)
	}
	if lr.err != nil {
		return nil, lr.err
	}
	return &lr.g, nil
}

// record reads the record whose tag was just read.
func (lr *logReader) record(tag byte, at *time.Duration) {
	op, kind := logOp(tag&tagOp), Kind(tag>>3&0x7)
	hasStream, block := tag&tagStream != 0, tag&tagBlock != 0
	if kind == kindEscape && lr.g.Version >= 2 {
		k, err := lr.ReadByte()
		if err != nil {
			lr.fail("memory kind: %v", io.ErrUnexpectedEOF)
			return
		}
		kind = Kind(k)
	}
	if kind >= NumKinds {
		lr.fail("memory kind %d", kind)
		return
	}
	switch op {
	case logScope, logSegment:
		if hasStream || block || (op == logScope && kind != 0) {
			lr.fail("tag 0x%02x: flags on a %s record", tag, map[logOp]string{logScope: "scope", logSegment: "segment"}[op])
			return
		}
		if op == logScope {
			lr.scope()
		} else {
			lr.segment(kind)
		}
		return
	case logAlloc, logFree, logFailed:
	default:
		lr.fail("tag 0x%02x: unknown record type %d", tag, op)
		return
	}
	if op == logFailed && block {
		lr.fail("tag 0x%02x: a failed allocation marked as a block", tag)
		return
	}
	dt := lr.int63("time")
	if dt > math.MaxInt64-int64(*at) {
		lr.fail("time past %v", time.Duration(math.MaxInt64))
		return
	}
	*at += time.Duration(dt)
	e := LogEvent{Kind: kind, At: *at, Block: block}
	switch op {
	case logAlloc:
		e.Op = OpAlloc
		e.Bytes = lr.int63("size")
		e.ID = len(lr.allocAt)
	case logFailed:
		e.Op = OpFailed
		e.Bytes = lr.int63("size")
	case logFree:
		e.Op = OpFree
		lr.free(&e)
	}
	e.Scope = lr.scopeRef()
	if hasStream {
		s := lr.uvarint("stream")
		if lr.err == nil && (s == 0 || s > uint64(lr.g.Streams)+1) {
			lr.fail("stream %d before stream %d", s, lr.g.Streams+1)
		}
		e.Stream = int(s)
		lr.g.Streams = max(lr.g.Streams, e.Stream)
	}
	if lr.err != nil {
		return
	}
	if e.Op == OpAlloc {
		lr.allocAt = append(lr.allocAt, len(lr.g.Events))
		lr.freeAt = append(lr.freeAt, -1)
	}
	if e.Op == OpFree && e.ID > 0 {
		lr.freeAt[e.ID] = len(lr.g.Events)
	}
	lr.g.Events = append(lr.g.Events, e)
}

// ref reads a reference to an allocation and returns its id (0: the ref
// was 0).
func (lr *logReader) ref() int {
	ref := lr.uvarint("allocation ref")
	if lr.err != nil || ref == 0 {
		return 0
	}
	allocs := uint64(len(lr.allocAt) - 1)
	if ref > allocs {
		lr.fail("ref %d back, past the %d allocations so far", ref, allocs)
		return 0
	}
	return int(allocs - ref + 1)
}

// free fills in a free's id and size.
func (lr *logReader) free(e *LogEvent) {
	id := lr.ref()
	if lr.err != nil {
		return
	}
	if id == 0 {
		e.Bytes = lr.int63("size")
		return
	}
	a := lr.g.Events[lr.allocAt[id]]
	switch {
	case lr.freeAt[id] >= 0:
		lr.fail("allocation %d freed twice", id)
	case a.Kind != e.Kind || a.Block != e.Block:
		lr.fail("allocation %d (%v, block %v) freed as %v, block %v", id, a.Kind, a.Block, e.Kind, e.Block)
	}
	e.ID, e.Bytes, e.Segment = id, a.Bytes, a.Segment
}

// scopeRef reads an event's scope.
func (lr *logReader) scopeRef() int {
	s := lr.uvarint("scope")
	if lr.err == nil && s > uint64(len(lr.g.Scopes)) {
		lr.fail("scope %d of %d", s, len(lr.g.Scopes))
		return 0
	}
	return int(s)
}

// scope reads a scope record.
func (lr *logReader) scope() {
	parent := lr.uvarint("scope parent")
	if lr.err == nil && parent > uint64(len(lr.g.Scopes)) {
		lr.fail("scope %d's parent %d is not defined before it", len(lr.g.Scopes)+1, parent)
	}
	name := lr.name("scope name")
	if lr.err == nil {
		lr.g.Scopes = append(lr.g.Scopes, LogScope{Name: name, Parent: int(parent)})
	}
}

// segment reads a segment record.
func (lr *logReader) segment(kind Kind) {
	id := lr.ref()
	if lr.err != nil {
		return
	}
	if id == 0 {
		lr.fail("segment of allocation 0")
		return
	}
	a := &lr.g.Events[lr.allocAt[id]]
	switch {
	case a.Kind != kind || a.Block:
		lr.fail("segment mark for allocation %d (%v, block %v) as %v", id, a.Kind, a.Block, kind)
		return
	case a.Segment:
		lr.fail("allocation %d marked as a segment twice", id)
		return
	}
	a.Segment = true
	if f := lr.freeAt[id]; f >= 0 {
		lr.g.Events[f].Segment = true
	}
}
