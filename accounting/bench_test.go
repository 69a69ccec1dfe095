package accounting_test

import (
	"testing"
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// The cost of recording one event, logging off. The target is at most 50 ns
// and 0 allocations per event.

func BenchmarkRecordCopy(b *testing.B) {
	var l accounting.Ledger
	b.ReportAllocs()
	for b.Loop() {
		l.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, time.Microsecond)
	}
	perEvent(b, 1)
}

func BenchmarkRecordCopyParallel(b *testing.B) {
	var l accounting.Ledger
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.RecordCopy(accounting.HtoD, accounting.PathPinned, 4096, time.Microsecond)
		}
	})
	perEvent(b, 1)
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
	var l accounting.Ledger
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = l.Alloc(accounting.Device, 0x1000, 4096)
			l.Free(accounting.Device, 0x1000, 4096)
		}
	})
	perEvent(b, 2)
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
