package sim_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx"
	"github.com/cuarray/cuarray/device/sim"
)

// TestReadOnlyWatchesLeaveOutWhatAWrittenArrayDeclares: the interpreter
// watches the bytes of In arrays that no written array declares too, so
// that interleaved strided views (a[::2] written from a[1::2]) are no
// violation, and a separate In array is watched whole.
func TestReadOnlyWatchesLeaveOutWhatAWrittenArrayDeclares(t *testing.T) {
	span := func(p, n int64, ro bool) driver.Range {
		return driver.Range{Ptr: devarray.Ptr(p), N: n, ReadOnly: ro, Name: "x"}
	}
	for _, tc := range []struct {
		name   string
		arrays []driver.Range
		want   [][2]uint64
	}{
		{"apart", []driver.Range{span(0x1000, 64, false), span(0x2000, 64, true)}, [][2]uint64{{0x2000, 64}}},
		{"interleaved views of one buffer", []driver.Range{span(0x1000, 60, false), span(0x1004, 60, true)}, [][2]uint64{{0x103c, 4}}}, // the read view's last 4 bytes lie past the written one
		{"written inside the read one", []driver.Range{span(0x1010, 16, false), span(0x1000, 64, true)}, [][2]uint64{{0x1000, 16}, {0x1020, 32}}},
		{"only written", []driver.Range{span(0x1000, 64, false)}, nil},
		{"empty read-only", []driver.Range{span(0x1000, 0, true)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [][2]uint64
			for _, w := range sim.ReadOnlyWatches(tc.arrays) {
				assert.Equal(t, ptx.ReadOnlyWrite, w.Kind)
				got = append(got, [2]uint64{w.Addr, w.N})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
