package accounting_test

import (
	"io"
	"testing"

	"github.com/cuarray/cuarray/accounting"
)

// An allocation and its free while a recording writes them (to
// io.Discard): what Record adds to BenchmarkAllocFree, measured beside it.
func BenchmarkAllocFreeRecorded(b *testing.B) {
	var l accounting.Ledger
	rec, err := l.Record(io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Close()
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Alloc(accounting.Device, 0x1000, 4096)
		l.Free(accounting.Device, 0x1000, 4096)
	}
	perEvent(b, 2)
}
