package pool_test

import (
	"fmt"
	"testing"

	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// benchSizes are the request sizes the alloc+free benchmarks use.
var benchSizes = []int64{256, 4 << 20, 256 << 20}

// BenchmarkAllocFree compares an alloc+free pair served by the pool's cache
// with the same pair made on the device directly (cuMemAlloc+cuMemFree on a
// GPU). The ratio of the two is the figure the pool is for.
func BenchmarkAllocFree(b *testing.B) {
	dev := testdev.Open(b)
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("device/%d", size), func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				p, err := dev.Malloc(size)
				if err != nil {
					b.Fatal(err)
				}
				if err := dev.Free(p); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("pool/%d", size), func(b *testing.B) {
			p := pool.New(dev)
			defer p.Release()
			b.SetBytes(size)
			for b.Loop() {
				ptr, err := p.Alloc(size)
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Free(ptr); err != nil {
					b.Fatal(err)
				}
			}
			if st := p.Stats(); st.FromDevice != 1 {
				b.Fatalf("the pool went to the device %d times, want once", st.FromDevice)
			}
		})
	}
}

// BenchmarkAllocFreeParallel is BenchmarkAllocFree's 256-byte pair made
// from GOMAXPROCS goroutines at once, each allocating and freeing its own
// blocks: what the pool's one lock costs under contention, against the
// device's own allocator under the same load.
func BenchmarkAllocFreeParallel(b *testing.B) {
	dev := testdev.Open(b)
	const size = 256
	b.Run("device", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := dev.Malloc(size)
				if err != nil {
					b.Error(err)
					return
				}
				if err := dev.Free(p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("pool", func(b *testing.B) {
		p := pool.New(dev)
		defer p.Release()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				ptr, err := p.Alloc(size)
				if err != nil {
					b.Error(err)
					return
				}
				if err := p.Free(ptr); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
