package mpi

import (
	"errors"
	"fmt"
	"math"
)

// MaxCount is the largest count one MPI call takes: a C int.
const MaxCount = math.MaxInt32

// DefaultChunkBytes is the bytes of one block of the derived datatype
// that describes a span longer than the chunk (SetChunkBytes changes it).
const DefaultChunkBytes int64 = 1 << 30

// ErrTooLarge is returned for a span that no datatype of this package can
// describe (more than MaxCount chunks).
var ErrTooLarge = errors.New("span too large")

// ErrInvalidSpan is returned for a negative offset or length, or a chunk
// size outside 1 to MaxCount.
var ErrInvalidSpan = errors.New("invalid span")

// Span is Len bytes at byte offset Off of a buffer.
type Span struct {
	Off, Len int64
}

// Layout is a span as MPI sees it: Chunks blocks of Chunk bytes each from
// Off, then Rest bytes (Rest < Chunk). A span of at most Chunk bytes is
// Rest bytes alone, which MPI_BYTE with a count describes; a longer one is
// a derived datatype (a struct of a contiguous type of Chunk bytes, Chunks
// times, and Rest bytes), so that no count exceeds MaxCount.
type Layout struct {
	Off    int64
	Chunk  int64
	Chunks int64
	Rest   int64
}

// Split returns the layout of span s in chunks of chunk bytes.
func Split(s Span, chunk int64) (Layout, error) {
	if chunk < 1 || chunk > MaxCount {
		return Layout{}, fmt.Errorf("mpi: chunk of %d bytes: want 1 to %d: %w", chunk, MaxCount, ErrInvalidSpan)
	}
	if s.Off < 0 || s.Len < 0 || s.Off > math.MaxInt64-s.Len {
		return Layout{}, fmt.Errorf("mpi: span of %d bytes at %d: %w", s.Len, s.Off, ErrInvalidSpan)
	}
	l := Layout{Off: s.Off, Chunk: chunk}
	if s.Len <= chunk {
		l.Rest = s.Len
		return l, nil
	}
	l.Chunks, l.Rest = s.Len/chunk, s.Len%chunk
	if l.Chunks > MaxCount {
		return Layout{}, fmt.Errorf("mpi: span of %d bytes in chunks of %d: %d chunks, at most %d: %w", s.Len, chunk, l.Chunks, MaxCount, ErrTooLarge)
	}
	return l, nil
}

// Len is the bytes the layout describes.
func (l Layout) Len() int64 { return l.Chunks*l.Chunk + l.Rest }

// Derived reports whether the layout needs a derived datatype: it is
// longer than one chunk.
func (l Layout) Derived() bool { return l.Chunks > 0 }

// Blocks lists the layout's runs of bytes as (offset, length), in order:
// what a derived datatype built from it covers. A test of the arithmetic
// can check them without allocating the bytes.
func (l Layout) Blocks() []Span {
	var out []Span
	for i := range l.Chunks {
		out = append(out, Span{Off: l.Off + i*l.Chunk, Len: l.Chunk})
	}
	if l.Rest > 0 {
		out = append(out, Span{Off: l.Off + l.Chunks*l.Chunk, Len: l.Rest})
	}
	return out
}

// Spans returns the spans of consecutive blocks of counts[i] elements of
// size bytes each, from offset 0 in rank order: the send or receive side
// of an Alltoallv whose blocks are packed one after the other. It refuses
// negative counts and totals that overflow.
func Spans(counts []int64, size int64) ([]Span, error) {
	if size < 1 {
		return nil, fmt.Errorf("mpi: element of %d bytes: %w", size, ErrInvalidSpan)
	}
	out := make([]Span, len(counts))
	var off int64
	for i, c := range counts {
		if c < 0 || c > (math.MaxInt64-off)/size {
			return nil, fmt.Errorf("mpi: block %d of %d elements of %d bytes at byte %d: %w", i, c, size, off, ErrInvalidSpan)
		}
		out[i] = Span{Off: off, Len: c * size}
		off += c * size
	}
	return out, nil
}

// Simple reports whether every span can go to MPI as MPI_BYTE with an int
// count and an int displacement (MPI_Alltoallv): no span is longer than
// chunk and no offset exceeds MaxCount. Otherwise each span needs a
// derived datatype of its own (MPI_Alltoallw, its offset inside the type).
func Simple(spans []Span, chunk int64) bool {
	for _, s := range spans {
		if s.Len > chunk || s.Off > MaxCount || s.Len > MaxCount {
			return false
		}
	}
	return true
}

// End is the byte just past the last span: the buffer length they need.
func End(spans []Span) int64 {
	var e int64
	for _, s := range spans {
		e = max(e, s.Off+s.Len)
	}
	return e
}
