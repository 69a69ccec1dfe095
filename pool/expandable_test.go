package pool_test

import (
	"bytes"
	"errors"
	"testing"

	rand "github.com/cuarray/cuarray/internal/testrand"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pool"
)

// chunkOf returns the bytes an expandable pool of dev maps at a time: the
// recommended granularity.
func chunkOf(t *testing.T, dev device.Device) int64 {
	t.Helper()
	g, err := dev.MemGranularity()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("no virtual memory here: %v", err)
	}
	require.NoError(t, err)
	return (g.Recommended + g.Minimum - 1) / g.Minimum * g.Minimum
}

// roundTo rounds n up to a multiple of m.
func roundTo(n, m int64) int64 { return (n + m - 1) / m * m }

// An expandable pool's one segment grows in place: the first block keeps
// its address and contents, the block that needs more memory lies right
// after it, across the old end of the mapped range and the chunks mapped
// for it, and nothing is copied. The ledger counts the reservation as
// virtual-address memory, the chunks mapped as physical memory (the pool's
// reserved bytes), and the block log under physical; Trim unmaps the free
// chunks at the end, Release everything.
func TestExpandableGrowsInPlace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		onStream bool
	}{{"default stream", false}, {"stream", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.For(t)
			dev := testdev.Open(t)
			chunk := chunkOf(t, dev)
			var s device.Stream
			if tc.onStream {
				s = newStream(t, dev)
			}
			sync := func() {
				if s != nil {
					require.NoError(t, s.Synchronize())
				}
			}
			led := dev.Ledger()
			before := led.Snapshot()
			var log bytes.Buffer
			rec, err := led.Record(&log)
			require.NoError(t, err)
			reserve := 16*chunk + 1 + r.Int64N(chunk)
			p := pool.New(dev, pool.Expandable(reserve))

			n1 := 1 + r.Int64N(2*chunk)
			a, err := p.AllocAsync(n1, s)
			require.NoError(t, err)
			dataA := testdev.RandomBytes(int(n1))
			sync()
			require.NoError(t, dev.CopyHtoD(a, dataA))
			mapped := p.Stats().Reserved
			assert.Equal(t, roundTo(n1, chunk), mapped, "chunks enough for the first block")

			// The next block takes the rest of the mapped range and more:
			// it starts right after a and ends in chunks mapped for it.
			rest := mapped - accounting.AllocBytes(n1)
			n2 := rest + 1 + r.Int64N(3*chunk)
			b, err := p.AllocAsync(n2, s)
			require.NoError(t, err)
			assert.Equal(t, a+devarray.Ptr(accounting.AllocBytes(n1)), b, "the new block is adjacent to the first")
			st := p.Stats()
			assert.Equal(t, 1, st.Segments, "one segment, grown")
			assert.Equal(t, int64(2), st.FromDevice, "two growth steps")
			assert.Equal(t, roundTo(accounting.AllocBytes(n1)+n2, chunk), st.Reserved)
			if rest > 0 {
				assert.Less(t, int64(b), int64(a)+mapped, "the block begins before the old end")
			}
			assert.Greater(t, int64(b)+n2, int64(a)+mapped, "and ends after it")
			dataB := testdev.RandomBytes(int(n2))
			sync()
			require.NoError(t, dev.CopyHtoD(b, dataB))
			assert.Equal(t, dataB, testdev.Peek(t, dev, b, n2), "the block across the old end holds what was written")
			assert.Equal(t, dataA, testdev.Peek(t, dev, a, n1), "the first block kept its contents in place")

			d := accounting.Diff(before, led.Snapshot())
			assert.Equal(t, roundTo(reserve, chunk), d.Kinds[accounting.VirtualAddress].Current, "the reservation, once")
			assert.Equal(t, int64(1), d.Kinds[accounting.VirtualAddress].Allocs)
			assert.Equal(t, st.Reserved, d.Kinds[accounting.Physical].Current, "the chunks mapped")
			assert.Equal(t, st.Cached, led.Snapshot().Kinds[accounting.Physical].Cached, "the cached bytes are physical")
			assert.Zero(t, d.Kinds[accounting.Device].Allocs, "nothing from cuMemAlloc")
			for _, c := range d.Copies[accounting.DtoD] {
				assert.Zero(t, c.Count, "growing copies nothing")
			}

			// Trim unmaps the chunks past the first block once b is free.
			require.NoError(t, p.FreeAsync(b, s))
			sync()
			freed, err := p.Trim()
			require.NoError(t, err)
			keep := roundTo(accounting.AllocBytes(n1), chunk)
			assert.Equal(t, st.Reserved-keep, freed)
			assert.Equal(t, keep, p.Stats().Reserved)
			assert.Equal(t, keep, led.Current(accounting.Physical)-before.Kinds[accounting.Physical].Current)
			assert.Equal(t, dataA, testdev.Peek(t, dev, a, n1), "the block in use stays")

			require.NoError(t, p.FreeAsync(a, s))
			require.NoError(t, p.Release())
			require.NoError(t, rec.Close())
			after := led.Snapshot()
			assert.Equal(t, before.Kinds[accounting.VirtualAddress].Current, after.Kinds[accounting.VirtualAddress].Current, "the reservation is freed")
			assert.Equal(t, before.Kinds[accounting.Physical].Current, after.Kinds[accounting.Physical].Current, "every chunk went back")
			assert.Zero(t, after.Kinds[accounting.Physical].Cached)
			assert.Zero(t, p.Stats().Segments)

			g, err := accounting.ReadLog(&log)
			require.NoError(t, err)
			blocks := 0
			for _, e := range g.Events {
				if e.Block {
					blocks++
					assert.Equal(t, accounting.Physical, e.Kind, "the block log says physical")
				}
			}
			assert.Equal(t, 4, blocks, "two allocations and their frees")

			c, err := p.Alloc(1 + r.Int64N(chunk))
			require.NoError(t, err, "a pool used after Release reserves again")
			require.NoError(t, p.Free(c))
			require.NoError(t, p.Release())
			assert.Zero(t, led.Current(accounting.VirtualAddress)-before.Kinds[accounting.VirtualAddress].Current)
		})
	}
}

// A request the pool cannot map, past its reservation or past the
// device's memory, fails with a typed out-of-memory error and loses
// nothing: the chunks mapped, the blocks and their contents stay, and a
// request that fits is served after.
func TestExpandableOutOfRoom(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sim          string // a sim device of its own; "": the test device
		reserve      int64  // in chunks
		big          int64  // the request that fails, in chunks (and a random part of one more)
		reservation  bool   // the reservation refuses, not the device
		failInjected bool   // the device fails its second chunk (sim's FailAlloc)
	}{
		{"past the reservation", "", 4, 4, true, false},
		{"device out of memory", "sim:0?mem=32MiB", 64, 20, false, false},
		{"a chunk fails half-way", "sim:0?mem=256MiB", 64, 2, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.For(t)
			dev := testdev.Open(t)
			if tc.sim != "" {
				dev = openSim(t, tc.sim)
			}
			chunk := chunkOf(t, dev)
			led := dev.Ledger()
			base := led.Current(accounting.Physical)
			p := pool.New(dev, pool.Expandable(tc.reserve*chunk))
			t.Cleanup(func() { assert.NoError(t, p.Release()) })

			n := 1 + r.Int64N(chunk)
			a, err := p.Alloc(n)
			require.NoError(t, err)
			data := testdev.RandomBytes(int(n))
			require.NoError(t, dev.CopyHtoD(a, data))
			st := p.Stats()

			big := tc.big*chunk + 1 + r.Int64N(chunk)
			if tc.failInjected {
				dev.(interface{ FailAlloc(n int64) }).FailAlloc(2)
			}
			_, err = p.Alloc(big)
			require.Error(t, err)
			if tc.failInjected {
				require.ErrorIs(t, err, device.ErrInjected)
			} else {
				var oom *pool.OutOfMemoryError
				require.ErrorAs(t, err, &oom)
				assert.Equal(t, accounting.AllocBytes(big), oom.Requested)
				require.ErrorIs(t, err, accounting.ErrOutOfMemory)
				assert.Equal(t, tc.reservation, errors.Is(err, pool.ErrReservationFull), "%v", err)
			}
			after := p.Stats()
			assert.Equal(t, st.Reserved, after.Reserved, "nothing mapped for the failed request stays")
			assert.Equal(t, st.InUse, after.InUse)
			assert.Equal(t, st.Reserved, led.Current(accounting.Physical)-base)
			assert.Equal(t, data, testdev.Peek(t, dev, a, n), "the block in use kept its contents")

			b, err := p.Alloc(chunk + r.Int64N(chunk))
			require.NoError(t, err, "a request that fits is served")
			assert.Equal(t, 1, p.Stats().Segments)
			require.NoError(t, p.Free(b))
			require.NoError(t, p.Free(a))
		})
	}
}
