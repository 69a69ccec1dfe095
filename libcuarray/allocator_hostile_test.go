//go:build cgo

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/hostile"
)

// Many threads malloc and free through the PyTorch entry points while
// another keeps switching the device index between two devices of the same
// ordinal, with and without the pool: every block goes back to the device
// it came from, nothing deadlocks, and both devices are back to zero.
func TestAllocatorUseWhileAllocating(t *testing.T) {
	const ordinal = 32
	a, index := allocatorDevice(t, ordinal, true, 0)
	hb, err := openDevice("sim:32?mem=512MiB")
	require.NoError(t, err)
	b, err := deviceOf(hb)
	require.NoError(t, err)
	ha := deviceHandle(a)
	before, _ := allocatorStats()

	stop := make(chan struct{})
	var switcher sync.WaitGroup
	switcher.Add(1)
	go func() {
		defer switcher.Done()
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		for {
			select {
			case <-stop:
				return
			default:
			}
			h := []uint64{ha, hb}[rng.IntN(2)]
			_, err := useAllocator(h, rng.IntN(2) == 0, -1)
			assert.NoError(t, err)
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), rand.Uint64()))
				var held []uintptr
				var sizes []int64
				for range 300 {
					if len(held) > 0 && rng.IntN(2) == 0 {
						i := rng.IntN(len(held))
						torchFree(held[i], sizes[i], index, 0)
						held, sizes = append(held[:i], held[i+1:]...), append(sizes[:i], sizes[i+1:]...)
						continue
					}
					size := 1 + rng.Int64N(256<<10)
					if p := torchMalloc(size, index, 0); p != 0 {
						held, sizes = append(held, p), append(sizes, size)
					}
				}
				for i, p := range held {
					torchFree(p, sizes[i], index, 0)
				}
			}()
		}
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("mallocs and frees did not finish while the device was being switched: deadlock")
	}
	close(stop)
	switcher.Wait()
	after, _ := allocatorStats()
	assert.Zero(t, after.Errors-before.Errors, "every free found its block (no thread recorded an error)")
	settleAllocator(t, a)
	settleAllocator(t, b)
	assert.Zero(t, a.Ledger().Current(accounting.Device), "device a back to zero")
	assert.Zero(t, b.Ledger().Current(accounting.Device), "device b back to zero")
	_, err = useAllocator(ha, false, -1)
	require.NoError(t, err)
}

// A stream that another library used with the allocator and then
// destroyed: the free on it that finds it closed is reported (the pool
// has the block back), and the allocator forgets its wrapper, so that the
// next malloc on that handle is refused as a stream that is not live
// instead of handing out memory on the dead stream, and every later free
// on it failing.
func TestAllocatorClosedStream(t *testing.T) {
	defer onOneThread()()
	d, index := allocatorDevice(t, 33, true, 0)
	s, err := d.NewStream()
	require.NoError(t, err)
	h := s.Handle()
	size := 1 + rand.Int64N(1<<20)
	p := torchMalloc(size, index, h)
	require.NotZero(t, p, lastError(false))
	torchFree(p, size, index, h)
	require.Empty(t, lastError(true))
	require.NoError(t, s.Close())

	q := torchMalloc(size, index, h) // the block freed on that stream is still its own
	if q != 0 {
		torchFree(q, size, index, h)
		assert.Contains(t, lastError(true), "closed", "the free on the closed stream is reported")
	}
	r := torchMalloc(size, index, h)
	assert.Zero(t, r, "a malloc on the destroyed stream's handle is refused")
	assert.Contains(t, lastError(true), "not a live stream")
	torchFree(r, size, index, h)
	settleAllocator(t, d)
	assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
	_, pools := allocatorStats()
	assert.Zero(t, pools[index].InUse, "the pool has nothing handed out")
}

// Bad handles and sizes at the allocator's, the scopes' and the planner's
// entry points (their Go side; test_alloc_hostile.py calls the C side
// with NULLs): each is an error or harmless, never a panic or a hang, and
// holds no memory.
func TestAllocatorHostile(t *testing.T) {
	d, index := allocatorDevice(t, 34, false, 0)
	dh := deviceHandle(d)
	arr, err := empty(dh, "float32", []int{4, 4}, true)
	require.NoError(t, err)
	freed, err := empty(dh, "float32", []int{4}, true)
	require.NoError(t, err)
	require.NoError(t, releaseArray(freed))
	sc, err := scopePush(dh, "hostile")
	require.NoError(t, err)
	popped, err := scopePush(dh, "popped")
	require.NoError(t, err)
	_, err = scopePop(popped)
	require.NoError(t, err)
	p := torchMalloc(4096, index, 0)
	require.NotZero(t, p)
	require.NoError(t, release(p, 4096, index, 0))
	noIndex := func(i int) func() error { return func() error { return hostile.Second(allocate(64, i, 0)) } }
	size := func(n int64) func() error { return func() error { return hostile.Second(allocate(n, index, 0)) } }
	use := func(h uint64) func() error { return func() error { return hostile.Second(useAllocator(h, true, -1)) } }
	hostile.Run(t, []hostile.Case{
		{"use: handle 0", use(0), errHandle},
		{"use: a freed array's handle", use(freed), errHandle},
		{"use: an array's handle", use(arr), errHandle},
		{"use: a scope's handle", use(sc), errHandle},
		{"use: handle 2^64-1", use(math.MaxUint64), errHandle},
		{"use: a negative limit leaves it", func() error { return hostile.Second(useAllocator(dh, false, math.MinInt64)) }, nil},
		{"malloc: device index -1", noIndex(-1), errNoAllocatorDevice},
		{"malloc: device index 2^31-1", noIndex(math.MaxInt32), errNoAllocatorDevice},
		{"malloc: -1 bytes (SIZE_MAX as ssize_t)", size(-1), device.ErrInvalidValue},
		{"malloc: -2^63 bytes", size(math.MinInt64), device.ErrInvalidValue},
		{"malloc: 2^63-1 bytes", size(math.MaxInt64), accounting.ErrOutOfMemory},
		{"malloc: 2^62 bytes", size(1 << 62), accounting.ErrOutOfMemory},
		{"free: NULL", func() error { return release(0, 0, index, 0) }, nil},
		{"free: twice", func() error { return release(p, 4096, index, 0) }, errNotAllocator},
		{"free: never allocated", func() error { return release(0xdead_0000, 64, index, 0) }, errNotAllocator},
		{"free: 2^64-1", func() error { return release(math.MaxUint64, -1, -1, math.MaxUint64) }, errNotAllocator},
		{"scope push: handle 0", func() error { return hostile.Second(scopePush(0, "x")) }, errHandle},
		{"scope push: an array's handle", func() error { return hostile.Second(scopePush(arr, "x")) }, errHandle},
		{"scope pop: handle 0", func() error { return hostile.Second(scopePop(0)) }, errHandle},
		{"scope pop: a device's handle", func() error { return hostile.Second(scopePop(dh)) }, errHandle},
		{"scope pop: an array's handle", func() error { return hostile.Second(scopePop(arr)) }, errHandle},
		{"scope pop: twice", func() error { return hostile.Second(scopePop(popped)) }, errHandle},
		{"plan: empty request", func() error { return hostile.Second(planMaxSlices(nil)) }, errBadRequest},
		{"plan: available past int64", func() error {
			return hostile.Second(planMaxSlices([]byte(`{"method":"identity","other_dims":[1,1],"dtype":"float32","available_memory":9223372036854775808}`)))
		}, errBadRequest},
	})
	_, err = scopePop(sc)
	assert.NoError(t, err, "the scope outlived the bad calls")
	assert.NoError(t, releaseArray(arr))
	assert.Zero(t, d.Ledger().Current(accounting.Device), "the bad calls held nothing")
}

// FuzzAllocatorCalls drives the allocator's Go side with any sequence of
// mallocs (0, odd, huge, negative sizes; the default stream or a handle
// that is no stream), frees (right, with the wrong size, index or stream,
// twice, of pointers it never handed out) and switches of the pool: no
// call panics or hangs, and once the blocks still held are freed and the
// pool gives its cache back, the device is at zero.
func FuzzAllocatorCalls(f *testing.F) {
	h, err := openDevice("sim:35?mem=64MiB")
	if err != nil {
		f.Fatal(err)
	}
	d, err := deviceOf(h)
	if err != nil {
		f.Fatal(err)
	}
	index, err := useAllocator(h, false, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte{0, 10, 3, 0, 200, 9, 1, 0, 0, 2, 1, 1, 5, 0, 0, 4, 1, 0, 0, 7, 7, 3, 9, 9})
	f.Add([]byte{4, 1, 0, 0, 1, 1, 0, 2, 2, 0, 3, 3, 1, 0, 0, 5, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		type block struct {
			p    uintptr
			size int64
		}
		var held []block
		sizes := []int64{0, 1, 255, 256, 257, 1 << 20, -1, math.MinInt64, math.MaxInt64, 1 << 62, 64 << 20}
		for i := 0; i+2 < len(ops); i += 3 {
			op, a, b := ops[i], int(ops[i+1]), int(ops[i+2])
			pick := func() (block, bool) {
				if len(held) == 0 {
					return block{}, false
				}
				k := a % len(held)
				blk := held[k]
				held = append(held[:k], held[k+1:]...)
				return blk, true
			}
			switch op % 6 {
			case 0:
				size := sizes[a%len(sizes)]
				if a >= len(sizes) {
					size = int64(a) << (b % 24)
				}
				stream := uintptr(0)
				if b%4 == 3 {
					stream = 0xbad0_0000 + uintptr(b)
				}
				if p, err := allocate(size, index, stream); err == nil && p != 0 {
					held = append(held, block{p, size})
				}
			case 1:
				if blk, ok := pick(); ok {
					assert.NoError(t, release(blk.p, blk.size, index, 0))
				}
			case 2:
				if blk, ok := pick(); ok {
					assert.Error(t, release(blk.p, blk.size+int64(b)+1, index+a, 0xbad0_0000+uintptr(b)), "a free with the wrong size is reported")
				}
			case 3:
				assert.Error(t, release(uintptr(a+1)<<(b%48), int64(b), index, 0), "a pointer never handed out")
			case 4:
				_, err := useAllocator(h, b%2 == 0, -1)
				assert.NoError(t, err)
			case 5:
				if blk, ok := pick(); ok {
					assert.NoError(t, release(blk.p, blk.size, index, 0))
					assert.ErrorIs(t, release(blk.p, blk.size, index, 0), errNotAllocator, "a second free")
				}
			}
		}
		for _, blk := range held {
			assert.NoError(t, release(blk.p, blk.size, index, 0))
		}
		allocator.Lock()
		p := allocator.pools[d]
		allocator.Unlock()
		if p != nil {
			require.NoError(t, p.Release())
		}
		assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
	})
}
