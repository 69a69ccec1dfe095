package bench_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// TestPageableRows: where the device has pageable memory access, the
// pageable-in-place rows move every byte once, recorded on the ledger's
// path pageable, one record per move, none on another path, with a ratio
// to the pinned row of the same run; where it has none, the rows are
// missing and the report says why.
func TestPageableRows(t *testing.T) {
	r := rand.For(t)
	open := func(spec string) func(t *testing.T) device.Device {
		return func(t *testing.T) device.Device {
			dev, err := device.Open(spec)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, dev.Close()) })
			return dev
		}
	}
	for _, tc := range []struct {
		name string
		open func(t *testing.T) device.Device
	}{
		{"sim hmm", open("sim:0?mem=64MiB&pageable-access=hmm")},
		{"sim ats", open("sim:0?mem=64MiB&pageable-access=ats")},
		{"sim none", open("sim:0?mem=64MiB")},
		{"test device", func(t *testing.T) device.Device { return testdev.Open(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := tc.open(t)
			size := int64(16+r.IntN(48))<<10 + int64(r.IntN(4096))
			rep, err := bench.Run(dev, bench.Config{Sizes: []int64{size}, Budget: 4 * size, MaxRepeats: 4, PCIe: 1000,
				Paths: []transfer.Path{transfer.PathPinned}, Pageable: true})
			require.NoError(t, err)
			if !dev.PageableAccess().Supported() {
				for _, dir := range []string{"HtoD", "DtoH"} {
					assert.Nil(t, rep.Find(bench.PageableInPlace, dir, size), dir)
				}
				require.Len(t, rep.Unsupported, 1)
				assert.Contains(t, rep.Unsupported[0], "pageable-in-place")
				assert.Contains(t, rep.Table(), "no pageable memory access")
				return
			}
			assert.Empty(t, rep.Unsupported)
			for _, dir := range []string{"HtoD", "DtoH"} {
				q := rep.Find(bench.PageableInPlace, dir, size)
				require.NotNil(t, q, rep.Table())
				require.NotNil(t, q.Ledger)
				l := q.Ledger
				assert.True(t, q.LedgerOK(), "%s: %+v %s", dir, *l, q.Impossible)
				assert.Equal(t, size*int64(q.Repeats), l.Requested)
				assert.Equal(t, l.Requested, l.Bytes, "%s: every byte once on the path pageable", dir)
				assert.Equal(t, int64(q.Repeats), l.Copies, "%s: one kernel per move", dir)
				assert.Zero(t, l.Other, "%s: no copy on another path", dir)
				assert.Positive(t, l.Seconds)
				require.NotNil(t, q.VsPinned, "a ratio to the pinned row of the same run")
				assert.Positive(t, *q.VsPinned)
			}
			assert.Contains(t, rep.Table(), bench.PageableInPlace)
		})
	}
}
