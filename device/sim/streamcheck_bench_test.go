package sim

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/cuarray/cuarray/devarray"
)

// BenchmarkStreamCheck is the checker's cost for one operation that
// touches one 256-byte range, against a history of n ranges written by
// two streams, after the host synchronized with both (go test -bench
// StreamCheck ./device/sim/). B/range is the memory the history takes per
// range it tracks.
func BenchmarkStreamCheck(b *testing.B) {
	for _, n := range []int{1, 1000, 100000} {
		b.Run(fmt.Sprintf("ranges=%d", n), func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			c := newStreamChecker()
			lanes := []*lane{c.streamLane(0x100, true), c.streamLane(0x101, true)}
			const base, stride, size = uintptr(1 << 40), 512, 256
			for i := range n {
				lo := base + uintptr(i)*stride
				if err := c.check(opSpec{kind: "memset", l: lanes[i%2], accesses: []access{{lo: lo, hi: lo + size, write: true}}}); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			perRange := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
			c.hostWaitsForAll() // everything so far is ordered before what follows
			b.ResetTimer()
			for i := range b.N {
				lo := base + uintptr(i%n)*stride
				if err := c.check(opSpec{kind: "copy", l: lanes[0], accesses: []access{{lo: lo, hi: lo + size, write: i%4 == 0}}}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(perRange, "B/range") // after the timer's reset, which drops reported metrics
		})
	}
}

// BenchmarkMemsetAsync is a 256-byte async memset queued on a stream, with
// the checker off and on (and a Synchronize every 64 operations): what the
// checker adds to a stream operation through the public API.
func BenchmarkMemsetAsync(b *testing.B) {
	for _, check := range []bool{false, true} {
		b.Run(fmt.Sprintf("check=%v", check), func(b *testing.B) {
			d, err := New(Config{Memory: 1 << 20, CheckStreams: check})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			p, err := d.Malloc(64 << 10)
			if err != nil {
				b.Fatal(err)
			}
			s, err := d.NewStream()
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ResetTimer()
			for i := range b.N {
				off := int64(i%256) * 256
				if err := s.MemsetAsync(p+devarray.Ptr(off), byte(i), 256); err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
