package mpi

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkCover asserts that l's blocks run back to back over [off, off+n),
// none longer than the chunk, with no count above MaxCount.
func checkCover(t *testing.T, l Layout, off, n, chunk int64) {
	t.Helper()
	assert.Equal(t, n, l.Len(), "the layout covers the span")
	assert.LessOrEqual(t, l.Chunks, int64(MaxCount), "a block count fits a C int")
	assert.Less(t, l.Rest, max(chunk, 1)+1, "the rest is at most a chunk")
	if l.Chunks <= 1000 {
		at := off
		for _, b := range l.Blocks() {
			assert.Equal(t, at, b.Off, "blocks follow each other")
			assert.LessOrEqual(t, b.Len, chunk)
			assert.Positive(t, b.Len)
			at += b.Len
		}
		assert.Equal(t, off+n, at)
	}
}

func TestSplit(t *testing.T) {
	const gib = int64(1) << 30
	tests := []struct {
		name         string
		span         Span
		chunk        int64
		chunks, rest int64
		derived      bool
		wantErr      error
	}{
		{"empty", Span{0, 0}, gib, 0, 0, false, nil},
		{"one byte", Span{7, 1}, gib, 0, 1, false, nil},
		{"exactly a chunk", Span{0, 4096}, 4096, 0, 4096, false, nil},
		{"a chunk and a byte", Span{0, 4097}, 4096, 1, 1, true, nil},
		{"whole chunks", Span{64, 3 * 4096}, 4096, 3, 0, true, nil},
		// 2^31 float32 elements (8 GiB), and 2^31+3 of them, in 1 GiB chunks
		{"2^31 float32", Span{0, 4 << 31}, gib, 8, 0, true, nil},
		{"2^31+3 float32 at an offset past 2^31", Span{5 << 31, 4*(1<<31) + 12}, gib, 8, 12, true, nil},
		{"the largest count in 1-byte chunks", Span{0, MaxCount + 1}, 1, MaxCount, 0, false, ErrTooLarge},
		{"chunk 0", Span{0, 10}, 0, 0, 0, false, ErrInvalidSpan},
		{"chunk above MaxCount", Span{0, 10}, MaxCount + 1, 0, 0, false, ErrInvalidSpan},
		{"negative length", Span{0, -1}, 16, 0, 0, false, ErrInvalidSpan},
		{"negative offset", Span{-1, 1}, 16, 0, 0, false, ErrInvalidSpan},
		{"offset and length overflow", Span{math.MaxInt64, 1}, 16, 0, 0, false, ErrInvalidSpan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Split(tt.span, tt.chunk)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.chunks, l.Chunks, "chunks")
			assert.Equal(t, tt.rest, l.Rest, "rest")
			assert.Equal(t, tt.derived, l.Derived(), "derived")
			checkCover(t, l, tt.span.Off, tt.span.Len, tt.chunk)
		})
	}
}

func TestSpansAndSimple(t *testing.T) {
	counts := make([]int64, 2+rand.IntN(6))
	var total int64
	for i := range counts {
		counts[i] = rand.Int64N(1000)
		total += counts[i]
	}
	spans, err := Spans(counts, 4)
	require.NoError(t, err)
	var at int64
	for i, s := range spans {
		assert.Equal(t, at, s.Off, "block %d starts where %d ends", i, i-1)
		assert.Equal(t, counts[i]*4, s.Len)
		at += s.Len
	}
	assert.Equal(t, total*4, End(spans))
	assert.True(t, Simple(spans, DefaultChunkBytes))
	longest := int64(0)
	for _, c := range counts {
		longest = max(longest, c*4)
	}
	assert.Equal(t, longest <= 3000, Simple(spans, 3000), "simple when no block is longer than the chunk (longest %d)", longest)

	tests := []struct {
		name   string
		spans  []Span
		chunk  int64
		simple bool
	}{
		{"small", []Span{{0, 10}, {10, 20}}, 64, true},
		{"a block past the chunk", []Span{{0, 10}, {10, 65}}, 64, false},
		{"an offset past 2^31", []Span{{0, 10}, {MaxCount + 1, 1}}, DefaultChunkBytes, false},
		{"a block of 2^31 float32", []Span{{0, 4 << 31}}, DefaultChunkBytes, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.simple, Simple(tt.spans, tt.chunk))
		})
	}
	_, err = Spans([]int64{1, -1}, 4)
	assert.ErrorIs(t, err, ErrInvalidSpan)
	_, err = Spans([]int64{math.MaxInt64 / 2, math.MaxInt64 / 2}, 4)
	assert.ErrorIs(t, err, ErrInvalidSpan, "a total that overflows")
	_, err = Spans([]int64{1}, 0)
	assert.ErrorIs(t, err, ErrInvalidSpan)
}

func FuzzSplit(f *testing.F) {
	f.Add(int64(0), int64(4<<31), int64(1<<30))
	f.Add(int64(3), int64(4097), int64(4096))
	f.Add(int64(1<<40), int64(12345678901), int64(1000))
	f.Fuzz(func(t *testing.T, off, n, chunk int64) {
		l, err := Split(Span{off, n}, chunk)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, off, int64(0))
		require.GreaterOrEqual(t, n, int64(0))
		checkCover(t, l, off, n, chunk)
		if n <= chunk {
			require.False(t, l.Derived(), "a span of one chunk needs no derived datatype")
		}
	})
}
