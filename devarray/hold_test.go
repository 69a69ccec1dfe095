package devarray_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// A Hold keeps the memory until its release, whichever of Free and the
// releases comes last; the ledger shows one free, at the right moment.
func TestHoldDefersFree(t *testing.T) {
	for _, tc := range []struct {
		name      string
		holds     int
		freeFirst bool
	}{
		{"free before one release", 1, true},
		{"free before three releases", 3, true},
		{"release before free", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := newDev(t)
			a, err := devarray.FromHost(dev, randomFloat32(256), 16, 16)
			require.NoError(t, err)
			v, err := a.Slice(0, 4, 8)
			require.NoError(t, err)
			var releases []func() error
			for range tc.holds {
				r, err := v.Hold() // a hold through a view holds the whole buffer
				require.NoError(t, err)
				releases = append(releases, r)
			}
			assert.Equal(t, tc.holds, a.Holds())
			current := func() int64 { return dev.Ledger().Current(accounting.Device) }
			if tc.freeFirst {
				require.NoError(t, a.Free())
				assert.ErrorIs(t, a.Err(), devarray.ErrFreed, "the owner sees its array freed at once")
				assert.Positive(t, current(), "the memory stays while held")
				_, err := a.Hold()
				assert.ErrorIs(t, err, devarray.ErrFreed, "no new hold on freed memory")
			}
			for i, r := range releases {
				require.NoError(t, r())
				require.NoError(t, r(), "a release is idempotent")
				if tc.freeFirst && i < len(releases)-1 {
					assert.Positive(t, current(), "still held by %d", len(releases)-1-i)
				}
			}
			if !tc.freeFirst {
				assert.Positive(t, current(), "released holds do not free an owned array")
				require.NoError(t, a.Free())
			}
			assert.Zero(t, current())
			assert.Equal(t, int64(1), dev.Ledger().Snapshot().Kinds[accounting.Device].Frees)
		})
	}
}

// Releases from many goroutines at once free the memory exactly once.
func TestHoldConcurrentReleases(t *testing.T) {
	dev := newDev(t)
	a, err := devarray.FromHost(dev, randomFloat32(64))
	require.NoError(t, err)
	releases := make([]func() error, 16)
	for i := range releases {
		releases[i], err = a.Hold()
		require.NoError(t, err)
	}
	require.NoError(t, a.Free())
	var wg sync.WaitGroup
	for _, r := range releases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, r())
		}()
	}
	wg.Wait()
	assert.Zero(t, a.Holds())
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
	assert.Equal(t, int64(1), dev.Ledger().Snapshot().Kinds[accounting.Device].Frees)
}
