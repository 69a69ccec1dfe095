package transfer_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// Every path queued on a stream, to and from contiguous and strided
// sides: the data arrives once the Op is waited for.
func TestCopyAsyncPaths(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(8192, 2, 2))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	for _, tc := range hostPaths {
		for _, strided := range []bool{false, true} {
			t.Run(tc.path.String(), func(t *testing.T) {
				d := deviceSide(t, dev, strided)
				defer d.free()
				h := hostSide(t, dev, tc.host, strided)
				defer h.free()
				back := hostSide(t, dev, tc.host, strided) // a strided one is scattered once the stream's copy is done
				defer back.free()
				want := randomFloats(rows * cols)
				h.write(t, want)
				before := dev.Ledger().Snapshot()
				in, err := c.CopyAsync(s, d.ep, h.ep, transfer.Via(tc.path))
				require.NoError(t, err)
				out, err := c.CopyAsync(s, back.ep, d.ep, transfer.Via(tc.path))
				require.NoError(t, err)
				require.NoError(t, out.Wait())
				require.NoError(t, in.Wait())
				done, err := in.Done()
				assert.True(t, done)
				assert.NoError(t, err)
				assert.Equal(t, want, back.read(t))
				diff := accounting.Diff(before, dev.Ledger().Snapshot())
				assert.Equal(t, int64(4*rows*cols), diff.Copies[accounting.HtoD][tc.path.Ledger()].Bytes)
				assert.Equal(t, int64(4*rows*cols), diff.Copies[accounting.DtoH][tc.path.Ledger()].Bytes)
			})
		}
	}
	_, err = c.CopyAsync(nil, transfer.Host(make([]float32, 4)), transfer.Host(make([]float32, 4)))
	assert.Error(t, err, "an async copy needs a stream")
}

// A pinned buffer an async copy still uses cannot be freed: Free says so
// and frees nothing; once the copy is done it frees.
func TestFreeDuringAsyncCopyIsCaught(t *testing.T) {
	dev := testdev.Open(t)
	c, s, buf, a := asyncRig(t, dev, 1<<20)

	resume := testdev.Hold(t, s)
	op, err := c.CopyAsync(s, transfer.Dev(a), transfer.Pinned(buf, devarray.Uint8))
	require.NoError(t, err)
	done, err := op.Done()
	require.NoError(t, err)
	assert.False(t, done, "the stream is held")
	assert.ErrorIs(t, buf.Free(), pinned.ErrBusy)
	assert.Equal(t, int64(1<<20), dev.Ledger().Current(accounting.Pinned), "nothing was freed")
	resume()
	require.NoError(t, op.Wait())
	got, err := devarray.ToHost[uint8](a)
	require.NoError(t, err)
	assert.Equal(t, buf.Bytes(), got, "the copy read the buffer intact")
	require.NoError(t, buf.Free())
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
}

// Fault injection: a failure at any step of a staged copy — a staging
// chunk, the temporary for a strided side, a DMA, a pack kernel's
// neighbour copy — returns an error and leaves no pinned or device memory
// allocated beyond the arrays the test made.
func TestStagedFailuresLeaveNothing(t *testing.T) {
	for _, strided := range []bool{false, true} {
		for _, toDevice := range []bool{true, false} {
			for _, fail := range []string{"alloc", "copy"} {
				failures := 0
				for step := int64(1); step <= 8; step++ {
					dev, err := device.Open("sim:0?mem=64MiB")
					require.NoError(t, err)
					d := deviceSide(t, dev, strided)
					h := hostSide(t, dev, "pageable", strided)
					base := dev.Ledger().Current(accounting.Device)
					c, err := transfer.New(dev, transfer.WithRing(4096, 3, 2))
					require.NoError(t, err)
					sd := dev.(*sim.Device)
					if fail == "alloc" {
						sd.FailAlloc(step)
					} else {
						sd.FailCopy(step)
					}
					src, dst := h.ep, d.ep
					if !toDevice {
						src, dst = d.ep, h.ep
					}
					err = c.Copy(dst, src, transfer.Via(transfer.PathStaged))
					sd.FailAlloc(0)
					sd.FailCopy(0)
					snap := dev.Ledger().Snapshot()
					if err != nil {
						failures++
						assert.ErrorIs(t, err, device.ErrInjected)
						assert.Zero(t, snap.Kinds[accounting.Pinned].Current, "%s failure at step %d: the ring is freed", fail, step)
						assert.Equal(t, base, snap.Kinds[accounting.Device].Current, "%s failure at step %d: temporaries are freed", fail, step)
					}
					require.NoError(t, c.Close())
					assert.Zero(t, dev.Ledger().Current(accounting.Pinned))
					d.free()
					assert.Zero(t, dev.Ledger().Current(accounting.Device))
					require.NoError(t, dev.Close())
				}
				assert.GreaterOrEqual(t, failures, 2, "strided %v, to device %v: %s failures were injected", strided, toDevice, fail)
			}
		}
	}
}

// Many goroutines polling and waiting on the same ops race for nothing.
func TestOpConcurrentDoneAndWait(t *testing.T) {
	dev := testdev.Open(t)
	c, s, buf, a := asyncRig(t, dev, 64<<10)
	for range 20 {
		op, err := c.CopyAsync(s, transfer.Dev(a), transfer.Pinned(buf, devarray.Uint8))
		require.NoError(t, err)
		done := make(chan struct{})
		for g := range 4 {
			go func() {
				defer func() { done <- struct{}{} }()
				if g%2 == 0 {
					assert.NoError(t, op.Wait())
					return
				}
				for {
					if ok, err := op.Done(); ok || err != nil {
						assert.NoError(t, err)
						return
					}
				}
			}()
		}
		for range 4 {
			<-done
		}
	}
	require.NoError(t, buf.Free())
}

// asyncRig makes what the async tests share: a copier, a stream, a pinned
// buffer of n random bytes and a device array of n bytes. The test frees
// the buffer itself; the rest is released when it ends.
func asyncRig(t *testing.T, dev device.Device, n int) (*transfer.Copier, driver.Stream, *pinned.Buffer, *devarray.DevArray) {
	c, err := transfer.New(dev)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	buf, err := pinned.Alloc(dev, int64(n), 0)
	require.NoError(t, err)
	copy(buf.Bytes(), testdev.RandomBytes(n))
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	return c, s, buf, a
}

// Freeing a device array while an async copy into it is queued cannot let
// the copy write into a new allocation: the Op holds the array, Free marks
// it freed at once, and its memory is given back once the copy is done.
// In the other order (Wait, then Free) nothing is deferred.
func TestFreeArrayDuringAsyncCopy(t *testing.T) {
	dev := testdev.Open(t)
	if !testdev.IsSim(dev) {
		// On CUDA the legacy default stream, which the new allocation's
		// synchronous upload runs on, waits for the held (blocking)
		// stream: the upload would wait for the resume that follows it.
		t.Skip("writes a new allocation while the copy's stream is held, which only sim's unordered streams allow")
	}
	const n = 1 << 20
	for _, freeFirst := range []bool{true, false} {
		t.Run(map[bool]string{true: "free while queued", false: "free after Wait"}[freeFirst], func(t *testing.T) {
			c, s, buf, a := asyncRig(t, dev, n)
			resume := testdev.Hold(t, s)
			op, err := c.CopyAsync(s, transfer.Dev(a), transfer.Pinned(buf, devarray.Uint8))
			require.NoError(t, err)
			if !freeFirst {
				resume()
				require.NoError(t, op.Wait())
			}
			require.NoError(t, a.Free(), "Free marks the array freed at once")
			assert.ErrorIs(t, a.Err(), devarray.ErrFreed)
			if freeFirst {
				assert.Equal(t, int64(n), dev.Ledger().Current(accounting.Device), "the memory stays while the copy is queued")
			}
			want := testdev.RandomBytes(n)
			b, err := devarray.FromBytes(dev, want, devarray.Uint8, n)
			require.NoError(t, err)
			defer b.Free()
			resume()
			require.NoError(t, op.Wait())
			got, err := devarray.ToHost[uint8](b)
			require.NoError(t, err)
			assert.Equal(t, want, got, "the new allocation kept its data")
			assert.Equal(t, int64(n), dev.Ledger().Current(accounting.Device), "the freed array's memory is back once the copy is done")
			require.NoError(t, buf.Free())
		})
	}
}

// A copy that fails on its stream keeps its error: Done may report it
// complete (and let its memory go), and Wait still returns the failure.
func TestDoneDoesNotLoseTheCopysError(t *testing.T) {
	dev, err := device.Open("sim:6?mem=16MiB&latency=" + testdev.SimLatency(testdev.Open(t)).String())
	require.NoError(t, err)
	defer dev.Close()
	c, s, buf, a := asyncRig(t, dev, 1<<16)
	dev.(interface{ FailCopy(int64) }).FailCopy(1)
	op, err := c.CopyAsync(s, transfer.Dev(a), transfer.Pinned(buf, devarray.Uint8))
	require.NoError(t, err, "queueing succeeds; the copy fails on the stream")
	for {
		done, err := op.Done()
		require.NoError(t, err)
		if done {
			break
		}
	}
	assert.ErrorIs(t, op.Wait(), device.ErrInjected)
	assert.ErrorIs(t, op.Wait(), device.ErrInjected, "and again")
	assert.ErrorIs(t, buf.Free(), device.ErrInjected, "the buffer's Free reports the failed copy once ...")
	assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "... and frees it")
}

// A staged async copy runs on a goroutine through a view of the device
// array's held memory. A view that runs backwards (Flip: a negative
// stride, its first element at the end of its bytes) is copied into and
// out of element by element: every value lands where the view says, both
// directions, with the bytes in the ledger.
func TestCopyAsyncStagedFlipped(t *testing.T) {
	dev := testdev.Open(t)
	c, err := transfer.New(dev, transfer.WithRing(8192, 2, 2))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	for _, tc := range []struct {
		name string
		axes []int
		// at is where element (i, j) of the flipped view lies in the array.
		at func(i, j int) int
	}{
		{"rows", []int{0}, func(i, j int) int { return (rows-1-i)*cols + j }},
		{"columns", []int{1}, func(i, j int) int { return i*cols + cols - 1 - j }},
		{"both", []int{0, 1}, func(i, j int) int { return (rows-1-i)*cols + cols - 1 - j }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := devarray.FromHost(dev, randomFloats(rows*cols), rows, cols)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Free()) }()
			view := a
			for _, axis := range tc.axes {
				view, err = view.Flip(axis)
				require.NoError(t, err)
			}
			want, back := randomFloats(rows*cols), randomFloats(rows*cols)
			before := dev.Ledger().Snapshot()
			in, err := c.CopyAsync(s, transfer.Dev(view), transfer.Host(want, rows, cols), transfer.Via(transfer.PathStaged))
			require.NoError(t, err)
			out, err := c.CopyAsync(s, transfer.Host(back, rows, cols), transfer.Dev(view), transfer.Via(transfer.PathStaged))
			require.NoError(t, err)
			require.NoError(t, in.Wait())
			require.NoError(t, out.Wait())
			assert.Equal(t, want, back, "the round trip through the flipped view")
			got, err := devarray.ToHost[float32](a)
			require.NoError(t, err)
			laid := make([]float32, rows*cols)
			for i := range rows {
				for j := range cols {
					laid[tc.at(i, j)] = want[i*cols+j]
				}
			}
			assert.Equal(t, laid, got, "each element in its place in the array")
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(4*rows*cols), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes)
			assert.Equal(t, int64(4*rows*cols), diff.Copies[accounting.DtoH][accounting.PathStaged].Bytes)
		})
	}
}

// Copies on one stream happen in the order they were queued, staged ones
// too: a copy queued behind two staged copies reads what the second one
// wrote, also when the first has been waited for (and let go) before it
// is queued. On sim with a latency the second staged copy, many chunks
// long, is still running then.
func TestCopyAsyncBehindStagedCopies(t *testing.T) {
	const n = 4 << 20
	devs := map[string]device.Device{"test": testdev.Open(t)}
	if testdev.IsSim(devs["test"]) {
		devs["latency"] = openSim(t, "sim:7?mem=64MiB&latency=1ms")
	}
	for name, dev := range devs {
		t.Run(name, func(t *testing.T) {
			c, err := transfer.New(dev, transfer.WithRing(64<<10, 2, 1))
			require.NoError(t, err)
			defer func() { require.NoError(t, c.Close()) }()
			s, err := dev.NewStream()
			require.NoError(t, err)
			defer s.Close()
			a, err := devarray.FromBytes(dev, testdev.RandomBytes(n), devarray.Uint8, n)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Free()) }()
			first, second, out := testdev.RandomBytes(n), testdev.RandomBytes(n), testdev.RandomBytes(n)
			before := dev.Ledger().Snapshot()
			resume := testdev.Hold(t, s) // both staged copies are queued before either runs
			op1, err := c.CopyAsync(s, transfer.Dev(a), transfer.HostBytes(first, devarray.Uint8), transfer.Via(transfer.PathStaged))
			require.NoError(t, err)
			op2, err := c.CopyAsync(s, transfer.Dev(a), transfer.HostBytes(second, devarray.Uint8), transfer.Via(transfer.PathStaged))
			require.NoError(t, err)
			resume()
			require.NoError(t, op1.Wait())
			buf, err := pinned.Alloc(dev, n, 0)
			require.NoError(t, err)
			defer func() { require.NoError(t, buf.Free()) }()
			copy(buf.Bytes(), out)
			op3, err := c.CopyAsync(s, transfer.Pinned(buf, devarray.Uint8), transfer.Dev(a), transfer.Via(transfer.PathPinned))
			require.NoError(t, err)
			require.NoError(t, op3.Wait())
			assert.True(t, bytes.Equal(second, buf.Bytes()), "the copy queued last reads what the second staged copy wrote")
			require.NoError(t, op2.Wait())
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(2*n), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes)
			assert.Equal(t, int64(n), diff.Copies[accounting.DtoH][accounting.PathPinned].Bytes)
		})
	}
}

// Close waits for the async copies nobody waited for and returns their
// errors: a copy that failed on its stream is not lost when its Op is
// dropped, and its memory is let go.
func TestCloseReturnsUnwaitedCopysError(t *testing.T) {
	dev, err := device.Open("sim:6?mem=16MiB&latency=" + testdev.SimLatency(testdev.Open(t)).String())
	require.NoError(t, err)
	defer dev.Close()
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "copy succeeds", true: "copy fails"}[fail], func(t *testing.T) {
			const n = 1 << 16
			c, s, buf, a := asyncRig(t, dev, n)
			if fail {
				dev.(interface{ FailCopy(int64) }).FailCopy(1)
			}
			_, err := c.CopyAsync(s, transfer.Dev(a), transfer.Pinned(buf, devarray.Uint8))
			require.NoError(t, err, "queueing succeeds; a failure happens on the stream")
			err = c.Close()
			if fail {
				assert.ErrorIs(t, err, device.ErrInjected, "Close reports the failure of the copy it waited for")
			} else {
				require.NoError(t, err)
				got, err := devarray.ToHost[uint8](a)
				require.NoError(t, err)
				assert.Equal(t, buf.Bytes(), got, "Close waited for the copy")
			}
			if fail {
				assert.ErrorIs(t, buf.Free(), device.ErrInjected, "the buffer's Free reports the copy that failed on it")
			} else {
				require.NoError(t, buf.Free())
			}
			assert.Zero(t, dev.Ledger().Current(accounting.Pinned), "the buffer was let go and freed")
		})
	}
}
