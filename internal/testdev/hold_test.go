package testdev_test

import (
	"fmt"
	"slices"
	"sync"
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
	mu     sync.Mutex
	errors []string
}

func (f *failingTB) Failed() bool { return f.failed.Load() || f.TB.Failed() }

// Errorf keeps the failure instead of failing the real test.
func (f *failingTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
	f.failed.Store(true)
}

// reported returns the failures Errorf kept.
func (f *failingTB) reported() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.errors)
}

// A stream held by Hold is let go when resume is called (twice is fine),
// when its test fails before resume, and at its deadline, which fails the
// test and names the call that waited: work behind the hold then ends, so
// a deferred free or close of a failing test does not hang, nor does a
// call that waits on the held stream.
func TestHoldLetsGo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline string
		end      func(tb *failingTB, resume func())
		failure  []string // in the test's failure, if it fails
	}{
		{"resume", "", func(_ *failingTB, resume func()) { resume() }, nil},
		{"resume twice", "", func(_ *failingTB, resume func()) { resume(); resume() }, nil},
		{"the test fails", "", func(tb *failingTB, _ func()) { tb.failed.Store(true) }, nil},
		{"the deadline passes", "300ms", func(*failingTB, func()) {},
			[]string{"a stream held for longer than 300ms (CUARRAY_HOLD_DEADLINE): a call waited on it", "Synchronize"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.deadline != "" {
				t.Setenv(testdev.HoldDeadlineEnv, tc.deadline)
			}
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
			if tc.failure == nil {
				assert.Empty(t, tb.reported(), "no failure")
				return
			}
			require.Len(t, tb.reported(), 1, "one failure")
			for _, w := range tc.failure {
				assert.Contains(t, tb.reported()[0], w)
			}
		})
	}
}
