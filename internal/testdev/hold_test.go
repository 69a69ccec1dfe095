package testdev_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
)

// failingTB is a test that can be made to report itself failed, as a
// require does, without failing the real test.
type failingTB struct {
	testing.TB
	failed atomic.Bool
}

func (f *failingTB) Failed() bool { return f.failed.Load() || f.TB.Failed() }

// A stream held by Hold is let go when resume is called (twice is fine),
// and when its test fails before resume: work behind the hold then ends,
// so a deferred free or close of a failing test does not hang.
func TestHoldLetsGo(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(tb *failingTB, resume func())
	}{
		{"resume", func(_ *failingTB, resume func()) { resume() }},
		{"resume twice", func(_ *failingTB, resume func()) { resume(); resume() }},
		{"the test fails", func(tb *failingTB, _ func()) { tb.failed.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := sim.New(sim.Config{Memory: 1 << 20})
			require.NoError(t, err)
			defer func() { assert.NoError(t, dev.Close()) }()
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer func() { assert.NoError(t, s.Close()) }()
			p, err := dev.Malloc(4096)
			require.NoError(t, err)
			defer func() { assert.NoError(t, dev.Free(p)) }()

			tb := &failingTB{TB: t}
			resume := testdev.Hold(tb, s)
			// Page-locked: a copy from pageable memory would wait for the
			// held stream before it returned, as on a GPU.
			h, err := dev.HostAlloc(4096, 0)
			require.NoError(t, err)
			defer func() { assert.NoError(t, dev.HostFree(h)) }()
			want := testdev.RandomBytes(4096)
			copy(h.Bytes, want)
			require.NoError(t, s.CopyHtoDAsync(p, h.Bytes))
			synced := make(chan error, 1)
			go func() { synced <- s.Synchronize() }()
			select {
			case err := <-synced:
				t.Fatalf("the stream passed its hold before it was let go (%v)", err)
			case <-time.After(50 * time.Millisecond):
			}
			tc.end(tb, resume)
			select {
			case err := <-synced:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the stream is still held")
			}
			got, err := dev.Peek(p, 4096)
			require.NoError(t, err)
			assert.Equal(t, want, got, "the copy behind the hold ran")
		})
	}
}
