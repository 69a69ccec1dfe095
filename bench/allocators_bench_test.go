package bench

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// allocator is one of the ways BenchmarkAllocators allocates and frees.
type allocator struct {
	name string
	// open makes the allocator ready for pairs on stream s: pair allocates
	// n bytes and frees them; done gives back what open set up.
	open func(dev device.Device, s device.Stream) (pair func(n int64) error, done func() error, err error)
}

// keepAll is the release threshold of a stream-ordered pool that keeps
// every byte it reserved at a synchronize.
const keepAll = math.MaxInt64 / 2

// allocators are the allocators BenchmarkAllocators puts side by side, the
// first the one the others are measured against.
var allocators = []allocator{
	{"cuMemAlloc", func(dev device.Device, _ device.Stream) (func(int64) error, func() error, error) {
		return func(n int64) error {
			p, err := dev.Malloc(n)
			if err != nil {
				return err
			}
			return dev.Free(p)
		}, func() error { return nil }, nil
	}},
	{"async", asyncAllocator(0)},
	{"async-keep", asyncAllocator(keepAll)},
	{"vmm", vmmGrowStep},
	{"pool", cachingOver(nil)},
	{"pool-async", cachingOver(overDefaultPool(0))},
	{"pool-async-keep", cachingOver(overDefaultPool(keepAll))},
	{"pool-vmm", cachingOver(expandable)},
}

// vmmGrowStep is a virtual-memory grow step: n bytes, rounded up to the
// recommended granularity, made and mapped accessible at the start of a
// reservation (cuMemCreate, cuMemMap, cuMemSetAccess), then unmapped and
// released (cuMemUnmap, cuMemRelease). The reservation, made once, holds
// the largest size.
func vmmGrowStep(dev device.Device, _ device.Stream) (func(int64) error, func() error, error) {
	g, err := dev.MemGranularity()
	if err != nil {
		return nil, nil, err
	}
	reserved := roundUp(slices.Max(allocatorSizes(dev)), g.Recommended)
	base, err := dev.ReserveAddress(reserved, 0)
	if err != nil {
		return nil, nil, err
	}
	return func(n int64) error {
		size := roundUp(n, g.Recommended)
		h, err := driver.MapNew(dev, base, size)
		if err != nil {
			return err
		}
		return driver.UnmapRelease(dev, base, size, h)
	}, func() error { return dev.FreeAddress(base, reserved) }, nil
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int64) int64 { return (n + m - 1) / m * m }

// expandable makes the caching pool grow in place by virtual memory
// (pool.Expandable), in a reservation twice the largest size.
func expandable(dev device.Device) (pool.Option, func() error, error) {
	return pool.Expandable(2 * slices.Max(allocatorSizes(dev))), func() error { return nil }, nil
}

// overDefaultPool makes the caching pool take its segments from the
// device's default stream-ordered pool with the given release threshold.
func overDefaultPool(threshold int64) func(device.Device) (pool.Option, func() error, error) {
	return func(dev device.Device) (pool.Option, func() error, error) {
		mp, done, err := defaultPool(threshold)(dev)
		if err != nil {
			return nil, nil, err
		}
		return pool.FromMemPool(mp), done, nil
	}
}

// defaultPool returns a func that sets the device's default stream-ordered
// pool's release threshold, and a func that puts it back to 0 and trims it.
func defaultPool(threshold int64) func(device.Device) (device.MemPool, func() error, error) {
	return func(dev device.Device) (device.MemPool, func() error, error) {
		mp, err := dev.DefaultMemPool()
		if err != nil {
			return nil, nil, err
		}
		if err := mp.SetReleaseThreshold(threshold); err != nil {
			return nil, nil, err
		}
		return mp, func() error {
			return errors.Join(mp.SetReleaseThreshold(0), dev.Synchronize(), mp.TrimTo(0))
		}, nil
	}
}

// asyncAllocator is cuMemAllocAsync+cuMemFreeAsync from the device's default
// pool with the given release threshold.
func asyncAllocator(threshold int64) func(device.Device, device.Stream) (func(int64) error, func() error, error) {
	return func(dev device.Device, s device.Stream) (func(int64) error, func() error, error) {
		_, done, err := defaultPool(threshold)(dev)
		if err != nil {
			return nil, nil, err
		}
		return func(n int64) error {
			p, err := s.MallocAsync(n)
			if err != nil {
				return err
			}
			return s.FreeAsync(p)
		}, done, nil
	}
}

// cachingOver is cuarray's caching pool, its segments from the device's
// own allocator (from nil) or where the option from returns says.
func cachingOver(from func(device.Device) (pool.Option, func() error, error)) func(device.Device, device.Stream) (func(int64) error, func() error, error) {
	return func(dev device.Device, s device.Stream) (func(int64) error, func() error, error) {
		p, doneFrom := pool.New(dev), func() error { return nil }
		if from != nil {
			opt, done, err := from(dev)
			if err != nil {
				return nil, nil, err
			}
			p, doneFrom = pool.New(dev, opt), done
		}
		return func(n int64) error {
			ptr, err := p.AllocAsync(n, s)
			if err != nil {
				return err
			}
			return p.FreeAsync(ptr, s)
		}, func() error { return errors.Join(p.Release(), doneFrom()) }, nil
	}
}

// allocatorSizes are BenchmarkAllocators' request sizes; 256 MiB is added
// on a device of at least 4 GiB.
func allocatorSizes(dev device.Device) []int64 {
	sizes := []int64{4 << 10, 1 << 20, 16 << 20}
	if dev.Info().TotalMemory >= 4<<30 {
		sizes = append(sizes, 256<<20)
	}
	return sizes
}

// BenchmarkAllocators puts the allocators side by side, at each size:
// cuMemAlloc+cuMemFree; cuMemAllocAsync+cuMemFreeAsync from the device's
// default stream-ordered pool, warm, with a release threshold of 0
// ("async": the pool gives its memory back at each synchronize) and with
// one that keeps everything ("async-keep"); a virtual-memory grow step
// ("vmm": cuMemCreate, cuMemMap and cuMemSetAccess of the size rounded up
// to the recommended granularity at the start of a reservation, then
// cuMemUnmap and cuMemRelease); and cuarray's caching pool over each of
// them ("pool", "pool-async", "pool-async-keep", and "pool-vmm", the pool
// growing in place, pool.Expandable). A pair is an
// allocation and its free on one stream. In SIZE/rounds the stream is
// synchronized once at the end of each round of pairs (its time counted,
// spread over the round): the allocators' own cost. In SIZE/sync each pair
// is followed by the stream's synchronize, one step of a loop that waits
// for its stream each time, where a release threshold acts: "async" gives
// its memory back at each synchronize and reserves it again at the next
// allocation. Every allocator runs a round of pairs in turn
// (up to 2,000 pairs, about 2 ms of the slowest allocator's), so that all
// meet the same load; each reports the median ns of a pair over the rounds
// (NAME-ns/pair) and the median ratio of cuMemAlloc's pair to its own over
// the rounds (NAME-x: how many times faster than cuMemAlloc+cuMemFree).
//
//	go test -run '^$' -bench Allocators -benchtime 20x ./bench
func BenchmarkAllocators(b *testing.B) {
	dev := testdev.Open(b)
	s, err := dev.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, size := range allocatorSizes(dev) {
		for _, syncEach := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d/%s", size, map[bool]string{false: "rounds", true: "sync"}[syncEach]), func(b *testing.B) {
				benchAllocators(b, dev, s, size, syncEach)
			})
		}
	}
}

// benchAllocators is BenchmarkAllocators at one size, a synchronize after
// each pair (syncEach) or after each round.
func benchAllocators(b *testing.B, dev device.Device, s device.Stream, size int64, syncEach bool) {
	const maxPairs, roundTime = 2000, 2 * time.Millisecond
	{
		{
			pairs := make([]func(int64) error, len(allocators))
			for i, a := range allocators {
				pair, done, err := a.open(dev, s)
				if err != nil {
					b.Fatalf("%s: %v", a.name, err)
				}
				defer func() {
					if err := done(); err != nil {
						b.Errorf("%s: %v", a.name, err)
					}
				}()
				pairs[i] = pair
			}
			n := 10
			round := func(i int) float64 {
				start := time.Now()
				for range n {
					if err := pairs[i](size); err != nil {
						b.Fatalf("%s: %d bytes: %v", allocators[i].name, size, err)
					}
					if syncEach {
						if err := s.Synchronize(); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
				return float64(time.Since(start).Nanoseconds()) / float64(n)
			}
			slowest := 0.0
			for i := range allocators {
				round(i) // warm: the pools hold their memory from here on
				slowest = max(slowest, round(i))
			}
			n = max(10, min(maxPairs, int(float64(roundTime.Nanoseconds())/slowest)))
			ns := make([][]time.Duration, len(allocators))
			ratios := make([][]time.Duration, len(allocators)) // ratios × 1e6, for median
			for k := 0; b.Loop(); k++ {
				each := make([]float64, len(allocators))
				for j := range allocators {
					i := (j + k) % len(allocators) // each in turn goes first
					each[i] = round(i)
				}
				for i, e := range each {
					ns[i] = append(ns[i], time.Duration(e))
					ratios[i] = append(ratios[i], time.Duration(each[0]/e*1e6))
				}
			}
			for i, a := range allocators {
				b.ReportMetric(float64(median(ns[i])), a.name+"-ns/pair")
				if i > 0 {
					b.ReportMetric(float64(median(ratios[i]))/1e6, a.name+"-x")
				}
			}
		}
	}
}
