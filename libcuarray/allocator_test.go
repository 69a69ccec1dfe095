//go:build cgo

package main

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
)

// allocatorDevice opens a device of its own for an allocator test (the
// ordinal is PyTorch's device index, so each test has its own), with the
// test device's options (make test-latency's latency included), and makes
// it the allocator's device for that index.
func allocatorDevice(t *testing.T, ordinal int, usePool bool, limit int64) (device.Device, int) {
	t.Helper()
	return allocatorDeviceOf(t, ordinal, usePool, false, limit)
}

// allocatorDeviceOf is allocatorDevice with the memory from the device's
// default stream-ordered pool when streamOrdered is set.
func allocatorDeviceOf(t *testing.T, ordinal int, usePool, streamOrdered bool, limit int64) (device.Device, int) {
	t.Helper()
	spec := fmt.Sprintf("sim:%d?mem=1GiB", ordinal)
	if _, latency, ok := strings.Cut(testSpec(), "latency="); ok {
		spec += "&latency=" + strings.Split(latency, "&")[0]
	}
	h, err := openDevice(spec)
	require.NoError(t, err)
	d, err := deviceOf(h)
	require.NoError(t, err)
	index, err := useAllocatorOf(h, usePool, streamOrdered, limit)
	require.NoError(t, err)
	require.Equal(t, ordinal, index, "the device index is the device's ordinal")
	return d, index
}

// settleAllocator waits for the streams and gives the device's pool's free
// segments back, so that the ledger shows what is still handed out.
func settleAllocator(t *testing.T, d device.Device, streams ...device.Stream) {
	t.Helper()
	for _, s := range streams {
		require.NoError(t, s.Synchronize())
	}
	allocator.Lock()
	p := allocator.pools[d]
	allocator.Unlock()
	if p != nil {
		require.NoError(t, p.Release())
	}
}

// The two PyTorch entry points, called as CUDAPluggableAllocator calls them:
// from many threads at once, random sizes (0, tiny, odd, a few MiB, and
// huge ones that cannot fit), on the default stream and two others, each
// free given the size and stream of its malloc. The ledger accounts for
// every call: without the pool one device allocation per malloc of more
// than 0 bytes, with the pool the pool's blocks; in both, every failure is
// a NULL with cuarray's message, which the failing thread reads as its last
// error, and the device is back to zero at the end.
func TestTorchEntryPointsLedger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordinal int
		pool    bool
	}{
		{"device", 11, false},
		{"pool", 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, index := allocatorDevice(t, tc.ordinal, tc.pool, 0)
			led := d.Ledger()
			s1, err := d.NewStream()
			require.NoError(t, err)
			defer s1.Close()
			s2, err := d.NewStream()
			require.NoError(t, err)
			defer s2.Close()
			streams := []uintptr{0, s1.Handle(), s2.Handle()}
			before := led.Snapshot().Kinds[accounting.Device]
			statsBefore, poolsBefore := allocatorStats() // the pool lives as long as the process (go test -count)
			scope := led.Push("torch")

			const workers, calls = 8, 150
			type result struct{ ok, zero, failed, bytes, rounded, messages int64 }
			results := make([]result, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer onOneThread()() // as a C thread: its last error is its own
					rng := rand.New(rand.NewPCG(uint64(w), rand.Uint64()))
					type block struct {
						p      uintptr
						size   int64
						stream uintptr
					}
					var held []block
					r := &results[w]
					for range calls {
						if len(held) > 0 && rng.IntN(3) == 0 {
							i := rng.IntN(len(held))
							b := held[i]
							held = append(held[:i], held[i+1:]...)
							torchFree(b.p, b.size, index, b.stream)
							continue
						}
						var size int64
						switch rng.IntN(10) {
						case 0:
							size = 0
						case 1:
							size = 1 << 50 // 1 PiB: never fits
						case 2:
							size = 1 + rng.Int64N(3<<20)
						default:
							size = 1 + rng.Int64N(64<<10)
						}
						stream := streams[rng.IntN(len(streams))]
						p := torchMalloc(size, index, stream)
						switch {
						case size == 0:
							assert.Zero(t, p, "a malloc of 0 bytes returns NULL")
							r.zero++
						case p == 0:
							r.failed++
							msg := lastError(true)
							if assert.Contains(t, msg, "out of memory", "the thread's last error is its failed malloc's") &&
								assert.Contains(t, msg, accounting.FormatBytes(size), "with the size asked for") {
								r.messages++
							}
						default:
							r.ok++
							r.bytes += size
							r.rounded += accounting.AllocBytes(size)
							held = append(held, block{p, size, stream})
						}
					}
					for _, b := range held {
						torchFree(b.p, b.size, index, b.stream)
					}
				}()
			}
			wg.Wait()
			var want result
			for _, r := range results {
				want.ok += r.ok
				want.zero += r.zero
				want.failed += r.failed
				want.bytes += r.bytes
				want.rounded += r.rounded
				want.messages += r.messages
			}
			require.Positive(t, want.ok)
			require.Positive(t, want.failed, "the 1 PiB requests fail")

			st, pools := allocatorStats()
			assert.Equal(t, want.ok, st.Allocated-statsBefore.Allocated, "allocations handed out")
			assert.Equal(t, want.ok, st.Frees-statsBefore.Frees, "each freed once")
			assert.Equal(t, want.zero, st.Zero-statsBefore.Zero, "0-byte mallocs")
			assert.Equal(t, want.failed, st.Failed-statsBefore.Failed, "failed mallocs")
			assert.Equal(t, want.ok+want.zero+want.failed, st.Mallocs-statsBefore.Mallocs, "every malloc counted")
			assert.Zero(t, st.Live-statsBefore.Live, "nothing left handed out")
			assert.Equal(t, want.failed, want.messages, "every failed malloc's thread read its message")
			assert.Equal(t, want.failed, st.Errors-statsBefore.Errors, "every failure counted in errors, whatever its thread")

			if !tc.pool {
				got, err := scope.Pop()
				require.NoError(t, err)
				dk := got.Kinds[accounting.Device]
				assert.Equal(t, want.ok, dk.Allocs, "the ledger's scope counts one device allocation per malloc")
				assert.Equal(t, want.ok, dk.Frees, "and one free per free")
				assert.Equal(t, want.rounded, dk.Allocated, "of the bytes asked for, in the device's 256-byte granules")
				assert.Equal(t, want.failed, dk.Failed, "the huge requests are the ledger's failures")
				after := led.Snapshot().Kinds[accounting.Device]
				assert.Equal(t, before.Current, after.Current, "device memory back where it was")
				return
			}
			ps, ps0 := pools[index], poolsBefore[index]
			assert.Equal(t, want.ok, ps.Allocs-ps0.Allocs, "the pool served every allocation")
			assert.Equal(t, want.ok, ps.Frees-ps0.Frees)
			assert.Zero(t, ps.InUse, "the pool has nothing handed out")
			assert.Positive(t, ps.FromCache-ps0.FromCache, "freed blocks were reused")
			got, err := scope.Pop()
			require.NoError(t, err)
			assert.Positive(t, got.Kinds[accounting.Device].Allocs, "the ledger counts the pool's segments")
			settleAllocator(t, d, s1, s2)
			after := led.Snapshot().Kinds[accounting.Device]
			assert.Equal(t, before.Current, after.Current, "device memory back where it was once the pool gives its cache back")
		})
	}
}

// A limit on the device's ledger (cuarray_allocator_use's limit) makes a
// malloc past it return NULL, with cuarray's message and figures as the last
// error, and counts nothing; under it the same sizes succeed.
func TestAllocatorLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ordinal int
		pool    bool
	}{
		{"device", 13, false},
		{"pool", 14, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer onOneThread()()
			limit := int64(1<<20) + rand.Int64N(1<<20)
			d, index := allocatorDevice(t, tc.ordinal, tc.pool, limit)
			defer func() { require.NoError(t, d.Ledger().SetLimit(accounting.Device, 0)) }()
			a := torchMalloc(limit/2, index, 0)
			require.NotZero(t, a, "half the limit fits: %s", lastError(false))
			before := d.Ledger().Snapshot().Kinds[accounting.Device]
			b := torchMalloc(limit, index, 0)
			assert.Zero(t, b, "the limit refuses a malloc past it")
			msg := lastError(true)
			t.Logf("refused: %s", msg)
			assert.Contains(t, msg, "out of memory")
			assert.Contains(t, msg, "limit is "+accounting.FormatBytes(limit), "the message carries the limit")
			assert.Contains(t, msg, fmt.Sprintf("malloc %d bytes", limit), "and the size asked for")
			after := d.Ledger().Snapshot().Kinds[accounting.Device]
			assert.Equal(t, before.Current, after.Current, "a refused malloc holds nothing")
			torchFree(a, limit/2, index, 0)
			assert.Empty(t, lastError(false), "the free was clean")
			c := torchMalloc(limit/2, index, 0)
			require.NotZero(t, c, "after the free, the same size fits again")
			torchFree(c, limit/2, index, 0)
			settleAllocator(t, d)
			assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
		})
	}
}

// Frees the allocator cannot match are harmless: a foreign pointer, a
// pointer freed twice and NULL change nothing and crash nothing; the first
// two record an error that says so. A malloc for a device index nobody
// named, or of a negative size (a size_t past ssize_t), is NULL with an error.
func TestAllocatorBadCalls(t *testing.T) {
	defer onOneThread()()
	d, index := allocatorDevice(t, 15, false, 0)
	p := torchMalloc(4096, index, 0)
	require.NotZero(t, p)
	before := d.Ledger().Snapshot().Kinds[accounting.Device]
	foreign := uintptr(unsafe.Pointer(&before))
	for _, tc := range []struct {
		name string
		call func()
		want string
	}{
		{"foreign pointer", func() { torchFree(foreign, 64, index, 0) }, "not allocated by cuarray's allocator"},
		{"NULL", func() { torchFree(0, 0, index, 0) }, ""},
		{"unknown device index", func() { assert.Zero(t, torchMalloc(64, 999, 0)) }, "no cuarray device for this device index"},
		{"negative size", func() { assert.Zero(t, torchMalloc(-1, index, 0)) }, "malloc -1 bytes"},
		{"unknown stream", func() {
			_, err := useAllocator(deviceHandle(d), true, -1)
			require.NoError(t, err)
			defer func() { _, _ = useAllocator(deviceHandle(d), false, -1) }()
			assert.Zero(t, torchMalloc(64, index, 0xdead0000))
		}, "stream 0xdead0000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer onOneThread()()
			require.NotPanics(t, tc.call)
			if tc.want == "" {
				assert.Empty(t, lastError(false))
			} else {
				assert.Contains(t, lastError(false), tc.want)
			}
			after := d.Ledger().Snapshot().Kinds[accounting.Device]
			assert.Equal(t, before.Current, after.Current, "nothing allocated or freed")
			assert.Equal(t, before.Frees, after.Frees)
		})
	}
	lastError(true)
	torchFree(p, 4096, index, 0)
	assert.Empty(t, lastError(false))
	torchFree(p, 4096, index, 0)
	assert.Contains(t, lastError(true), "freed twice", "a second free is an error")
	q := torchMalloc(100, index, 0)
	torchFree(q, 200, index, 0)
	assert.Contains(t, lastError(true), "given 200 bytes", "a free with the wrong size is reported")
	assert.Equal(t, before.Current-accounting.AllocBytes(4096), d.Ledger().Current(accounting.Device), "and frees the block all the same")
}

// With the pool, frees are stream-ordered: a block freed on stream s1 while
// s1 still has work queued is handed out again at once on s1, but not on
// s2 until s1 has passed the free. (CuPy's entry points: PyTorch's free
// waits for the device, see TestFinding02TorchPoolSideStream.)
func TestAllocatorStreamOrderedFree(t *testing.T) {
	defer onOneThread()()
	d, index := allocatorDevice(t, 16, true, 0)
	s1, err := d.NewStream()
	require.NoError(t, err)
	defer s1.Close()
	s2, err := d.NewStream()
	require.NoError(t, err)
	defer s2.Close()
	size := 1 + rand.Int64N(1<<20)

	resume, err := sim.Pause(s1) // s1 is busy, as with a long kernel
	require.NoError(t, err)
	p := cupyMalloc(size, index, s1.Handle())
	require.NotZero(t, p)
	cupyFree(p, size, index, s1.Handle())
	again := cupyMalloc(size, index, s1.Handle())
	assert.Equal(t, p, again, "s1 reuses its own freed block at once")
	cupyFree(again, size, index, s1.Handle())
	other := cupyMalloc(size, index, s2.Handle())
	assert.NotEqual(t, p, other, "s2 may not have the block while s1 has not passed the free")
	cupyFree(other, size, index, s2.Handle())
	resume()
	require.NoError(t, s1.Synchronize())
	require.NoError(t, s2.Synchronize())
	later := cupyMalloc(size, index, s2.Handle())
	require.NotZero(t, later)
	cupyFree(later, size, index, s2.Handle())
	settleAllocator(t, d, s1, s2)
	assert.Zero(t, d.Ledger().Current(accounting.Device), "the device is back to zero")
	assert.Empty(t, lastError(true))
}

// The allocator's counts and its pool's figures, as cuarray_allocator_stats
// reports them.
func TestAllocatorStats(t *testing.T) {
	_, index := allocatorDevice(t, 17, true, 0)
	before, _ := allocatorStats()
	size := 1 + rand.Int64N(1000)
	p := torchMalloc(size, index, 0)
	require.NotZero(t, p)
	st, pools := allocatorStats()
	assert.Equal(t, before.Live+1, st.Live)
	assert.Equal(t, before.InUse+size, st.InUse, "the bytes asked for")
	assert.GreaterOrEqual(t, st.PeakInUse, st.InUse)
	assert.Equal(t, accounting.AllocBytes(size), pools[index].InUse, "the pool hands out 256-byte granules")
	torchFree(p, size, index, 0)
	_, pools = allocatorStats()
	assert.Zero(t, pools[index].InUse)
}

// BenchmarkTorchMallocFree is a malloc and its free through the PyTorch
// entry points' Go side, from GOMAXPROCS goroutines: from the pool against
// straight from the device (the peer, in the same run).
func BenchmarkTorchMallocFree(b *testing.B) {
	for _, bc := range []struct {
		name    string
		ordinal int
		pool    bool
	}{
		{"device", 18, false},
		{"pool", 19, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, err := openDevice(fmt.Sprintf("sim:%d?mem=1GiB", bc.ordinal))
			require.NoError(b, err)
			index, err := useAllocator(h, bc.pool, 0)
			require.NoError(b, err)
			b.RunParallel(func(pb *testing.PB) {
				defer onOneThread()() // for lastError's message
				rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
				for pb.Next() {
					size := 1 + rng.Int64N(64<<10)
					p := torchMalloc(size, index, 0)
					if p == 0 {
						b.Error(lastError(false))
						return
					}
					torchFree(p, size, index, 0)
				}
			})
		})
	}
}

// cupyMalloc is cuarray_allocator_malloc (CuPy's entry point) in Go terms.
func cupyMalloc(size int64, index int, stream uintptr) uintptr {
	p, err := allocate(size, index, stream)
	recordError(err)
	return p
}

// cupyFree is cuarray_allocator_free (CuPy's entry point) in Go terms.
func cupyFree(ptr uintptr, size int64, index int, stream uintptr) {
	recordError(release(ptr, size, index, stream))
}
