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

// TestManagedRows: each managed path's row moves every byte once on the
// ledger path it says (migrated on a fault, or prefetched), with the page
// faults only where a kernel or the host touches pages resident elsewhere,
// and a ratio to the pinned row of the same run.
func TestManagedRows(t *testing.T) {
	dev := testdev.Open(t)
	r := rand.For(t)
	size := int64(64+r.IntN(64)) << 10 // whole pages and not
	size += int64(r.IntN(4096))
	rep, err := bench.Run(dev, bench.Config{Sizes: []int64{size}, Budget: 4 * size, MaxRepeats: 4, PCIe: 1000,
		Paths: []transfer.Path{transfer.PathPinned}, Managed: bench.ManagedPaths})
	require.NoError(t, err)
	pages := (size + 4095) / 4096
	tests := []struct {
		path       bench.ManagedPath
		dir        string
		prefetched bool
		faults     bool
		duplicates bool
	}{
		{bench.ManagedOnDemand, "HtoD", false, true, false},
		{bench.ManagedOnDemand, "DtoH", false, true, false},
		{bench.ManagedPrefetch, "HtoD", true, false, false},
		{bench.ManagedPrefetch, "DtoH", true, false, false},
		{bench.ManagedReadMostly, "HtoD", false, true, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.path)+"/"+tt.dir, func(t *testing.T) {
			q := rep.Find(string(tt.path), tt.dir, size)
			require.NotNil(t, q, rep.Table())
			require.NotNil(t, q.Ledger)
			l := q.Ledger
			assert.True(t, q.LedgerOK(), "%+v %s", *l, q.Impossible)
			assert.True(t, l.Untimed, "the driver's own page moves: no copy timed them")
			assert.Equal(t, size*int64(q.Repeats), l.Requested)
			assert.Equal(t, pages*4096*int64(q.Repeats), l.Bytes, "whole pages moved")
			if tt.prefetched {
				assert.Equal(t, l.Bytes, l.Prefetched)
				assert.Zero(t, l.Migrated)
			} else {
				assert.Equal(t, l.Bytes, l.Migrated)
				assert.Zero(t, l.Prefetched)
			}
			if tt.faults {
				assert.Equal(t, pages*int64(q.Repeats), l.Faults, "a fault per page per repeat")
			} else {
				assert.Zero(t, l.Faults)
			}
			if tt.duplicates {
				assert.Equal(t, pages*int64(q.Repeats), l.Duplicates, "a read-only copy per page per repeat")
			} else {
				assert.Zero(t, l.Duplicates)
			}
			require.NotNil(t, q.VsPinned, "a ratio to the pinned row of the same run")
			assert.Positive(t, *q.VsPinned)
		})
	}
	assert.Contains(t, rep.Table(), "managed-prefetch")
}

func TestParseManagedPath(t *testing.T) {
	for _, p := range bench.ManagedPaths {
		got, err := bench.ParseManagedPath(string(p))
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := bench.ParseManagedPath("managed-teleport")
	assert.Error(t, err)
}

// TestManagedPrefetchUnsupported: on a device without concurrent managed
// access, which no prefetch may use, the prefetch rows are not measured
// and the report says so; the others are.
func TestManagedPrefetchUnsupported(t *testing.T) {
	dev, err := device.Open("sim:0?mem=64MiB&managed=exclusive")
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, dev.Close()) })
	size := int64(16+rand.For(t).IntN(48)) << 10
	rep, err := bench.Run(dev, bench.Config{Sizes: []int64{size}, Budget: 4 * size, MaxRepeats: 4, PCIe: 1000,
		Paths: []transfer.Path{transfer.PathPinned}, Managed: bench.ManagedPaths})
	require.NoError(t, err)
	for _, dir := range []string{"HtoD", "DtoH"} {
		assert.Nil(t, rep.Find(string(bench.ManagedPrefetch), dir, size), dir)
		require.NotNil(t, rep.Find(string(bench.ManagedOnDemand), dir, size), dir)
	}
	require.Len(t, rep.Unsupported, 2)
	assert.Contains(t, rep.Unsupported[0], "managed-prefetch HtoD")
	assert.Contains(t, rep.Table(), "not supported on this device")
}
