//go:build cuda && cudaemu && linux

package main

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/cuda/conformance"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/internal/testdev"
)

// finding03Child names the case a child process of
// TestFinding03FirstCallRestoresCallersContext plays.
const finding03Child = "CUARRAY_TEST_FINDING03_CHILD"

// The first entry point a process calls, the one that starts the driver,
// leaves its caller's thread with the context it had. Another library
// (CuPy, PyTorch) calls libcuda straight and may have a context current
// before cuarray has started the driver; until cuarray's cu.Init, every
// driver call through its stubs answers CUDA_ERROR_NOT_INITIALIZED, so an
// entry point that saved the caller's context only through them saved
// nothing and left the primary context of the device it opened current.
// Each case runs in a process of its own, where cuarray has not started
// the driver, with two emulated GPUs; the other library plays with the
// emulated driver's Foreign calls, as straight calls into libcuda.
func TestFinding03FirstCallRestoresCallersContext(t *testing.T) {
	if c := os.Getenv(finding03Child); c != "" {
		finding03InChild(t, c)
		return
	}
	for _, tc := range []struct{ name, child string }{
		{"no context current", "none"},
		{"the primary context of GPU 0 current, cuarray opens GPU 1", "gpu0"},
		{"the primary context of GPU 1 current, cuarray opens GPU 1", "gpu1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestFinding03FirstCallRestoresCallersContext$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), finding03Child+"="+tc.child, emulated.EnvVar+"=devices=2")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "the child process:\n%s", out)
			assert.Contains(t, string(out), "--- PASS", "the child ran its case:\n%s", out)
		})
	}
}

// finding03InChild is one case of TestFinding03FirstCallRestoresCallersContext,
// in its own process.
func finding03InChild(t *testing.T, child string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, c := conformance.CtxGetCurrent()
	require.Equal(t, conformance.NotInitialized, c, "cuarray has not started the driver in this process yet: %s", conformance.ErrorName(c))
	require.Equal(t, conformance.Success, emulated.ForeignInit(), "the other library's cuInit")
	var want uintptr
	switch child {
	case "gpu0", "gpu1":
		dev := map[string]int{"gpu0": 0, "gpu1": 1}[child]
		ctx, c := emulated.ForeignPrimaryRetain(dev)
		require.Equal(t, conformance.Success, c, "the other library retains GPU %d's primary context", dev)
		defer emulated.ForeignPrimaryRelease(dev)
		require.Equal(t, conformance.Success, emulated.ForeignCtxSetCurrent(ctx))
		want = ctx
	}
	_, msg := deviceFromC("cuda:1")
	require.Empty(t, msg, "cuarray_device")
	cur, c := emulated.ForeignCtxGetCurrent()
	require.Equal(t, conformance.Success, c)
	assert.Equal(t, want, cur, "%s: the caller's current context after the first entry point", child)
}

// onThread runs f on an OS thread of its own, as a C thread of another
// library calls the allocator (the goroutine stays locked to the thread
// until f returns, so no other goroutine runs there meanwhile), with the
// primary context of device 0 current, and returns f's error.
func onThread(ctx uintptr, f func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if c := conformance.CtxSetCurrent(ctx); c != conformance.Success {
			done <- fmt.Errorf("cuCtxSetCurrent: %s", conformance.ErrorName(c))
			return
		}
		defer conformance.CtxSetCurrent(0)
		done <- f()
	}()
	return done
}

// driverCall turns a CUresult into an error naming the call.
func driverCall(what string, c int) error {
	if c != conformance.Success {
		return fmt.Errorf("%s: %s", what, conformance.ErrorName(c))
	}
	return nil
}

// Handle 2, CU_STREAM_PER_THREAD, names a different stream on each OS
// thread (CuPy passes it with CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1). With
// the pool, a block thread A frees on its per-thread stream, which still
// has work queued that reads the block, may be reused at once by thread A
// alone: thread B's "stream 2" is another stream, which has not passed
// A's free. Here A's stream is held by a gate (a host function, as a long
// kernel holds it) with a copy of the block queued behind it; B allocates
// the same size on its stream 2 and overwrites what it gets. A's copy must
// still read the block's old, random contents. So too when thread B frees
// A's block (on B's stream 2): no call on B can reach A's stream, so the
// free must wait for the device.
func TestFinding01PerThreadStreamsAreOnePerThread(t *testing.T) {
	if err := conformance.Init(); err != nil {
		t.Skipf("needs the emulated driver: %v", err)
	}
	h, err := openDevice("cuda:0")
	require.NoError(t, err)
	d, err := deviceOf(h)
	require.NoError(t, err)
	before := d.Ledger().Current(accounting.Device)
	index, err := useAllocator(h, true, -1)
	require.NoError(t, err)
	ctx, c := conformance.PrimaryRetain(0)
	require.NoError(t, driverCall("cuDevicePrimaryCtxRetain", c))
	defer conformance.PrimaryRelease(0)

	for _, tc := range []struct {
		name     string
		size     int64
		freedByB bool
	}{
		{"a small block freed by thread A", 1 + rand.Int64N(64<<10), false},
		{"a large block freed by thread A", 2<<20 + rand.Int64N(4<<20), false},
		{"a small block freed by thread B", 1 + rand.Int64N(64<<10), true},
		{"a large block freed by thread B", 2<<20 + rand.Int64N(4<<20), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := tc.size
			data := testdev.RandomBytes(int(size))
			// Page-locked, so that A's read is queued behind the gate: a copy
			// into pageable memory returns only once complete, Async too, so
			// it would wait for the gate that thread A itself opens later.
			var got conformance.Host
			require.NoError(t, <-onThread(ctx, func() error {
				var c int
				got, c = conformance.MemHostAlloc(int(size), 0)
				return driverCall("cuMemHostAlloc", c)
			}))
			defer func() {
				assert.NoError(t, <-onThread(ctx, func() error { return driverCall("cuMemFreeHost", conformance.MemFreeHost(got)) }))
			}()
			var p uintptr
			var gate *conformance.Gate
			ready, release := make(chan struct{}), make(chan struct{})
			aDone := onThread(ctx, func() error { // thread A
				if p = cupyMalloc(size, index, perThread); p == 0 {
					return fmt.Errorf("malloc on thread A: %s", lastError(true))
				}
				src := conformance.CMalloc(int(size))
				defer conformance.CFree(src)
				copy(src.Bytes(), data)
				if err := driverCall("cuMemcpyHtoD", conformance.MemcpyHtoD(p, src)); err != nil {
					return err
				}
				var c int
				if gate, c = conformance.NewGate(perThread); c != conformance.Success {
					return driverCall("gate", c)
				}
				defer gate.Release()
				if err := driverCall("cuMemcpyDtoHAsync", conformance.MemcpyDtoHAsync(got, p, perThread)); err != nil {
					return err
				}
				if !tc.freedByB {
					cupyFree(p, size, index, perThread) // the block's last use is queued on A's stream
					if msg := lastError(true); msg != "" {
						return fmt.Errorf("free on thread A: %s", msg)
					}
				}
				close(ready)
				<-release
				gate.Release()
				return driverCall("cuStreamSynchronize(A's stream 2)", conformance.StreamSynchronize(perThread))
			})
			select {
			case <-ready:
			case err := <-aDone:
				require.NoError(t, err)
				t.Fatal("thread A ended before its free")
			}
			bDone := onThread(ctx, func() error { // thread B
				if tc.freedByB { // as CuPy's garbage collection may, on its own stream 2
					cupyFree(p, size, index, perThread)
					if msg := lastError(true); msg != "" {
						return fmt.Errorf("free on thread B: %s", msg)
					}
					// What the free recorded on B's streams has passed, whatever it was.
					if err := driverCall("cuStreamSynchronize(B's stream 2)", conformance.StreamSynchronize(perThread)); err != nil {
						return err
					}
				}
				q := cupyMalloc(size, index, perThread)
				if q == 0 {
					return fmt.Errorf("malloc on thread B: %s", lastError(true))
				}
				defer cupyFree(q, size, index, perThread)
				if err := driverCall("cuMemsetD8Async", conformance.MemsetD8Async(q, 0xAB, int(size), perThread)); err != nil {
					return err
				}
				return driverCall("cuStreamSynchronize(B's stream 2)", conformance.StreamSynchronize(perThread))
			})
			select {
			case err := <-bDone: // B wrote its block while A's stream was held
				require.NoError(t, err, "thread B")
				close(release)
			case <-time.After(500 * time.Millisecond): // B's free waits for the device, A's stream too
				close(release)
				require.NoError(t, <-bDone, "thread B")
			}
			require.NoError(t, <-aDone, "thread A")
			assert.Equal(t, -1, firstDifference(data, got.Bytes()), "A's stream read the block it had, not thread B's bytes (the first byte that differs)")
			assert.Empty(t, lastError(true))
		})
	}
	allocator.Lock()
	pl := allocator.pools[d]
	allocator.Unlock()
	require.NoError(t, pl.Release())
	assert.Equal(t, before, d.Ledger().Current(accounting.Device), "the device's memory is back where it was")
}

// perThread is CU_STREAM_PER_THREAD.
const perThread = conformance.StreamPerThread
