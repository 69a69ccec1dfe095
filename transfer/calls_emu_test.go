//go:build cuda && cudaemu && linux

package transfer_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// callsOf returns the driver calls f makes, by function, and how many
// there are besides the copies themselves (cuMemcpy*).
func callsOf(f func()) (map[string]int64, int64) {
	before := emulated.Calls()
	f()
	after := emulated.Calls()
	diff := map[string]int64{}
	var besides int64
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			diff[name] = d
			if !strings.HasPrefix(name, "cuMemcpy") {
				besides += d
			}
		}
	}
	return diff, besides
}

func formatCalls(m map[string]int64) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, " %s×%d", name, m[name])
	}
	return b.String()
}

// What a 4 KiB CopyAsync and its Wait cost the driver beside the memcpy,
// counted on the emulated driver after a warm-up that makes the copier's
// streams, events and ring. CuPy's copy is the memcpy alone; the goal is
// at most 3 calls more from page-locked memory and 4 from pageable.
//
// From page-locked memory: one context switch for the memcpy and the
// record of the copier's pooled event after it (a stream's Batch), the
// record, and Wait's cuEventSynchronize, which needs no switch on a
// thread with a context current (9 calls before the events were pooled, 5
// while each call switched). From pageable memory, staged through the
// ring with the DMA on the caller's stream: the switch for the DMA and
// the record of the slot's event, the record, and the slot event's
// cuEventSynchronize with which the copy's goroutine waits (7 while the
// DMAs ran on the ring's streams after a synchronize of the caller's).
// The test runs on one OS thread, where the copy has made the device's
// context current; a Wait on a thread with no context current asks again
// with a switch: two calls more.
func TestSmallCopyAsyncDriverCalls(t *testing.T) {
	dev := testdev.Open(t)
	const n = 4 << 10
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	buf, err := pinned.Alloc(dev, n, 0)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	copy(buf.Bytes(), testdev.RandomBytes(n))
	pageable := testdev.RandomBytes(n)
	for _, tc := range []struct {
		name      string
		host      transfer.Endpoint
		want      []byte
		noContext bool // the Wait's thread has no context current
		allowed   int64
	}{
		{"page-locked", transfer.Pinned(buf, devarray.Uint8), buf.Bytes(), false, 3},
		{"pageable", transfer.HostBytes(pageable, devarray.Uint8), pageable, false, 4},
		{"page-locked, no context current at Wait", transfer.Pinned(buf, devarray.Uint8), buf.Bytes(), true, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func() {
				op, err := c.CopyAsync(s, transfer.Dev(a), tc.host)
				require.NoError(t, err)
				if tc.noContext {
					require.Zero(t, emulated.ForeignCtxSetCurrent(0), "another library leaves no context current")
				}
				require.NoError(t, op.Wait())
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			run() // warm-up
			calls, besides := callsOf(run)
			if tc.noContext { // the other library's cuCtxSetCurrent(NULL) is not the copy's
				calls["cuCtxSetCurrent"]--
				besides--
			}
			t.Logf("%s: 4 KiB CopyAsync and Wait: %d driver calls besides the copy:%s", tc.name, besides, formatCalls(calls))
			assert.LessOrEqual(t, besides, tc.allowed, "driver calls besides the copy")
			back := make([]byte, n)
			require.NoError(t, c.Copy(transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a)))
			assert.Equal(t, tc.want, back, "the copy's bytes")
		})
	}
}

// A staged copy waits for its DMAs through the events recorded after
// them, never for a whole stream: through a ring of 4 streams, a
// synchronous staged copy of 2 chunks, either way, queues a DMA and an
// event record per chunk under one context switch each, and waits with a
// cuEventSynchronize per chunk (HtoD, the last DMA through each slot;
// DtoH, each chunk's before its scatter). It synchronized the 2 streams
// that carried a chunk before (every copy synchronized all 4 before that),
// each with a switch of its own.
func TestStagedCopyWaitsForItsDMAsEvents(t *testing.T) {
	dev := testdev.Open(t)
	const chunk, chunks = 64 << 10, 2
	c, err := transfer.New(dev, transfer.WithRing(chunk, 3, 4))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	n := chunks*chunk - 1 - rand.IntN(chunk/2) // the last chunk short
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	src, back := testdev.RandomBytes(n), make([]byte, n)
	for _, tc := range []struct {
		name     string
		dst, src transfer.Endpoint
		memcpy   string
	}{
		{"HtoD", transfer.Dev(a), transfer.HostBytes(src, devarray.Uint8), "cuMemcpyHtoDAsync_v2"},
		{"DtoH", transfer.HostBytes(back, devarray.Uint8), transfer.Dev(a), "cuMemcpyDtoHAsync_v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func() { require.NoError(t, c.Copy(tc.dst, tc.src, transfer.Via(transfer.PathStaged))) }
			run() // warm-up: the ring is made
			calls, _ := callsOf(run)
			t.Logf("staged %s of %d bytes:%s", tc.name, n, formatCalls(calls))
			assert.Zero(t, calls["cuStreamSynchronize"], "no stream is waited on")
			assert.Equal(t, int64(chunks), calls["cuEventSynchronize"], "an event waited on per chunk")
			assert.Equal(t, int64(chunks), calls[tc.memcpy], "a DMA per chunk")
			assert.Equal(t, int64(chunks), calls["cuEventRecord"], "an event record per chunk")
			assert.LessOrEqual(t, calls["cuCtxSetCurrent"], int64(chunks), "one context switch per chunk's DMA and record")
		})
	}
	assert.Equal(t, src, back)
}
