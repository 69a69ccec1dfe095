package accounting_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// The cost of recording one event, logging off: at most 30 ns and 0
// allocations per event from one goroutine and from many on separate
// kinds; on one kind at most 2× the single-goroutine figure; with a limit
// set and a scope open, at most 60 ns from many goroutines. Every
// multi-goroutine benchmark also runs the same events from one goroutine
// in the same run and reports the ratio as x-single.

func BenchmarkRecordCopy(b *testing.B) {
	var l accounting.Ledger
	b.ReportAllocs()
	for b.Loop() {
		l.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, time.Microsecond)
	}
	perEvent(b, 1)
}

// BenchmarkRecordCopyParallel runs RunParallel with 1, 2 and 8 goroutines
// per P (SetParallelism), all on one direction and path.
func BenchmarkRecordCopyParallel(b *testing.B) {
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("per-P=%d", par), func(b *testing.B) {
			var l accounting.Ledger
			b.ReportAllocs()
			b.SetParallelism(par)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, time.Microsecond)
				}
			})
			perEvent(b, 1)
		})
	}
}

// perEvent reports the time per recorded event when each op records n events.
func perEvent(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/event")
}

// An allocation and its free: two events.
func BenchmarkAllocFree(b *testing.B) {
	var l accounting.Ledger
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Alloc(accounting.Device, 0x1000, 4096)
		l.Free(accounting.Device, 0x1000, 4096)
	}
	perEvent(b, 2)
}

func BenchmarkAllocFreeParallel(b *testing.B) {
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("per-P=%d", par), func(b *testing.B) {
			var l accounting.Ledger
			b.ReportAllocs()
			b.SetParallelism(par)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					_ = l.Alloc(accounting.Device, 0x1000, 4096)
					l.Free(accounting.Device, 0x1000, 4096)
				}
			})
			perEvent(b, 2)
		})
	}
}

// With a limit set and a scope open, the most work an event does with logging off.
func BenchmarkAllocFreeInScopeWithLimit(b *testing.B) {
	var l accounting.Ledger
	_ = l.SetLimit(accounting.Device, 1<<40)
	s := l.Push("bench")
	defer s.Pop()
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Alloc(accounting.Device, 0x1000, 4096)
		l.Free(accounting.Device, 0x1000, 4096)
	}
	perEvent(b, 2)
}

// eventLoad is what each goroutine of BenchmarkContention records, given
// its number: the events of one loop iteration, and how many they are.
type eventLoad struct {
	name   string
	events int
	setup  func(l *accounting.Ledger) func() // returns the cleanup
	run    func(l *accounting.Ledger, g int)
}

// kindOf spreads goroutines over the memory kinds, copy directions and paths.
func kindOf(g int) accounting.Kind { return accounting.Kind(g % int(accounting.NumKinds)) }

var eventLoads = []eventLoad{
	{name: "alloc-free/separate-kinds", events: 2, run: func(l *accounting.Ledger, g int) {
		_ = l.Alloc(kindOf(g), 0x1000, 4096)
		l.Free(kindOf(g), 0x1000, 4096)
	}},
	{name: "alloc-free/same-kind", events: 2, run: func(l *accounting.Ledger, _ int) {
		_ = l.Alloc(accounting.Device, 0x1000, 4096)
		l.Free(accounting.Device, 0x1000, 4096)
	}},
	{name: "copy/separate-paths", events: 1, run: func(l *accounting.Ledger, g int) {
		l.RecordCopy(accounting.Direction(g%int(accounting.NumDirections)), accounting.Path(g%int(accounting.NumPaths)), 4096, time.Microsecond)
	}},
	{name: "copy/same-path", events: 1, run: func(l *accounting.Ledger, _ int) {
		l.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, time.Microsecond)
	}},
	{name: "limit+scope/same-kind", events: 2,
		setup: func(l *accounting.Ledger) func() {
			_ = l.SetLimit(accounting.Device, 1<<40)
			s := l.Push("bench")
			return func() { _, _ = s.Pop() }
		},
		run: func(l *accounting.Ledger, _ int) {
			_ = l.Alloc(accounting.Device, 0x1000, 4096)
			l.Free(accounting.Device, 0x1000, 4096)
		}},
}

// BenchmarkContention records from an explicit number of goroutines (2, 4
// and 16, whatever GOMAXPROCS is), each running its share of b.N loop
// iterations, and reports ns/event: wall time over all events, so that on
// P cores perfect scaling shows as 1/P of the single-goroutine figure. The
// same b.N iterations from one goroutine are timed first, in the same run,
// and x-single is the ratio of the two ns/event figures (the goal on one
// kind: at most 2).
func BenchmarkContention(b *testing.B) {
	for _, load := range eventLoads {
		for _, gs := range []int{2, 4, 16} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", load.name, gs), func(b *testing.B) {
				b.ReportAllocs()
				single := timeGoroutines(b, load, 1, b.N)
				b.ResetTimer()
				elapsed := timeGoroutines(b, load, gs, b.N)
				b.StopTimer()
				events := float64(load.events * b.N)
				b.ReportMetric(float64(elapsed.Nanoseconds())/events, "ns/event")
				b.ReportMetric(float64(elapsed)/float64(single), "x-single")
			})
		}
	}
}

// timeGoroutines runs n iterations of load split over gs goroutines on a
// fresh ledger and returns the wall time from their common start.
func timeGoroutines(b *testing.B, load eventLoad, gs, n int) time.Duration {
	var l accounting.Ledger
	if load.setup != nil {
		defer load.setup(&l)()
	}
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for g := range gs {
		ready.Add(1)
		done.Add(1)
		share := n / gs
		if g < n%gs {
			share++
		}
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for range share {
				load.run(&l, g)
			}
		}()
	}
	ready.Wait()
	runtime.Gosched()
	t0 := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(t0)
	if load.events > 0 {
		snap := l.Snapshot()
		if got := snap.Allocations() + snap.Copied().Count; got != int64(n) {
			b.Fatalf("%s: %d events recorded, want %d", load.name, got, n)
		}
	}
	return elapsed
}
