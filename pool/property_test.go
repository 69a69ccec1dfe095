package pool_test

import (
	"errors"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// liveBlock is what the property test knows of a block it holds.
type liveBlock struct {
	ptr    devarray.Ptr
	size   int64 // rounded up to the granule
	stream device.Stream
	tag    byte   // the byte the block was filled with on its stream; 0: not checked
	check  []byte // where its first bytes are copied back before the free
}

// intervals is the sorted set of live [start, end) ranges.
type intervals []liveBlock

func (s *intervals) insert(t *testing.T, b liveBlock) {
	i, _ := slices.BinarySearchFunc(*s, b.ptr, func(x liveBlock, p devarray.Ptr) int { return int(int64(x.ptr) - int64(p)) })
	if i > 0 {
		prev := (*s)[i-1]
		require.LessOrEqual(t, prev.ptr+devarray.Ptr(prev.size), b.ptr, "block [%v,+%d) overlaps a live one at %v", b.ptr, b.size, prev.ptr)
	}
	if i < len(*s) {
		require.LessOrEqual(t, b.ptr+devarray.Ptr(b.size), (*s)[i].ptr, "block [%v,+%d) overlaps a live one at %v", b.ptr, b.size, (*s)[i].ptr)
	}
	*s = slices.Insert(*s, i, b)
}

func (s *intervals) remove(i int) liveBlock {
	b := (*s)[i]
	*s = slices.Delete(*s, i, i+1)
	return b
}

// randomSize draws a request: mostly small, some medium, a few large.
func randomSize(rng *rand.Rand) int64 {
	switch r := rng.Float64(); {
	case r < 0.70:
		return 1 + rng.Int64N(16<<10)
	case r < 0.97:
		return 16<<10 + rng.Int64N(1<<20)
	default:
		return 1<<20 + rng.Int64N(12<<20)
	}
}

// TestRandomOperations is the pool's property test: 100 000 random
// allocations and frees over four streams and the default stream. It checks
// that no two live blocks overlap, that data written on a block's stream is
// still there when that stream reads it back before the free (so no other
// stream was handed the block too early), that the pool's figures match the
// blocks held and the device ledger, and that Release gives every byte back.
func TestRandomOperations(t *testing.T) {
	const ops = 100_000
	dev := testdev.Open(t)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	p := pool.New(dev)
	const limit = 96 << 20
	require.NoError(t, p.SetLimit(limit))
	base := dev.Ledger().Current(accounting.Device)

	streams := []device.Stream{nil}
	for range 4 {
		s, err := dev.NewStream()
		require.NoError(t, err)
		defer s.Close()
		streams = append(streams, s)
	}
	var live intervals
	var checked []liveBlock
	var inUse int64
	limited, fragmented := 0, 0

	for op := range ops {
		if len(live) == 0 || rng.IntN(100) < 52 {
			s := streams[rng.IntN(len(streams))]
			n := randomSize(rng)
			ptr, err := p.AllocAsync(n, s)
			if errors.Is(err, accounting.ErrOutOfMemory) {
				var oom *pool.OutOfMemoryError
				require.ErrorAs(t, err, &oom)
				if !oom.ByLimit {
					// sim's arena is contiguous (a GPU maps pages): blocks in
					// use can leave no hole big enough though enough bytes are
					// free. The pool may refuse only when, after it gave back
					// all it could, the device cannot serve the request either.
					require.Less(t, inUse+oom.Requested, int64(limit)+1, "op %d: %v", op, err)
					d, derr := dev.Malloc(oom.Requested)
					if derr == nil {
						require.NoError(t, dev.Free(d))
					}
					require.ErrorIs(t, derr, accounting.ErrOutOfMemory, "op %d: the pool refused what the device could serve: %v", op, err)
					fragmented++
					continue
				}
				require.Greater(t, inUse+oom.Requested, int64(limit))
				limited++
				continue
			}
			require.NoError(t, err, "op %d", op)
			b := liveBlock{ptr: ptr, size: accounting.AllocBytes(n), stream: s}
			if s != nil && rng.IntN(8) == 0 {
				b.tag = byte(1 + rng.IntN(255))
				require.NoError(t, s.MemsetAsync(ptr, b.tag, n))
				b.check = make([]byte, min(n, 4096))
			}
			live.insert(t, b)
			inUse += b.size
		} else {
			b := live.remove(rng.IntN(len(live)))
			inUse -= b.size
			switch {
			case b.check != nil:
				// Read back on the block's own stream, then free it there.
				require.NoError(t, b.stream.CopyDtoHAsync(b.check, b.ptr))
				require.NoError(t, p.Free(b.ptr))
				checked = append(checked, b)
			case rng.IntN(3) == 0:
				require.NoError(t, p.FreeAsync(b.ptr, streams[rng.IntN(len(streams))]))
			default:
				require.NoError(t, p.Free(b.ptr))
			}
		}
		if op%1000 == 0 {
			st := p.Stats()
			require.Equal(t, inUse, st.InUse, "op %d", op)
			require.Equal(t, len(live), st.LiveBlocks, "op %d", op)
			require.Equal(t, st.Reserved, dev.Ledger().Current(accounting.Device)-base, "op %d: the ledger counts the pool's segments", op)
			require.GreaterOrEqual(t, st.Cached, int64(0))
			require.LessOrEqual(t, st.InUse, int64(limit))
		}
	}
	left := len(live)
	for _, b := range live {
		require.NoError(t, p.Free(b.ptr))
	}
	for _, s := range streams[1:] {
		require.NoError(t, s.Synchronize())
	}
	for _, b := range checked {
		require.Equal(t, slices.Repeat([]byte{b.tag}, len(b.check)), b.check, "block %v was changed before its stream freed it", b.ptr)
	}
	st := p.Stats()
	assert.Equal(t, int64(ops), st.Allocs+st.Frees-int64(left)+int64(limited+fragmented), "every operation was an alloc, a free or a refusal")
	assert.Equal(t, st.Allocs, st.FromCache+st.FromDevice)
	assert.Greater(t, st.FromCache, 10*st.FromDevice, "the cache serves most requests")
	t.Logf("allocs %d (cache %d, device %d), refused by the limit %d, by the device %d, peak in use %s, peak reserved %s, %d blocks checked",
		st.Allocs, st.FromCache, st.FromDevice, limited, fragmented, accounting.FormatBytes(st.PeakInUse), accounting.FormatBytes(st.PeakReserved), len(checked))
	require.NoError(t, p.Release())
	assert.Equal(t, base, dev.Ledger().Current(accounting.Device), "Release gave every byte back")
	assert.Zero(t, p.Stats().Reserved)
}
