//go:build cuda

package conformance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda"
	"github.com/cuarray/cuarray/kernels"
)

// ctx0 is device 0's primary context, retained for the whole run.
var (
	ctx0    uintptr
	initErr error
)

// childEnv names the conformance check a child process runs: the ones that
// spoil or reset the context, which must not take the other tests with them.
const childEnv = "CUARRAY_CONFORMANCE_CHILD"

func TestMain(m *testing.M) {
	if initErr = Init(); initErr == nil {
		var c int
		if ctx0, c = PrimaryRetain(0); c != Success {
			initErr = errorOf(c)
		}
	}
	os.Exit(m.Run())
}

type codeError int

func (c codeError) Error() string { return ErrorName(int(c)) }

func errorOf(c int) error { return codeError(c) }

// bind skips without a driver, and locks the test to an OS thread with
// device 0's primary context current: the driver's current context is per thread.
func bind(t *testing.T) {
	t.Helper()
	if initErr != nil {
		t.Skipf("needs a CUDA driver and a GPU, or the emulated driver (-tags cuda,cudaemu): %v", initErr)
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	ok(t, CtxSetCurrent(ctx0), "cuCtxSetCurrent")
}

// ok asserts a driver call succeeded.
func ok(t *testing.T, code int, call string) {
	t.Helper()
	require.Equal(t, Success, code, "%s: %s", call, ErrorName(code))
}

// onThread runs call on another OS thread with ctx current and returns its
// result on a channel.
func onThread(ctx uintptr, call func() int) <-chan int {
	ch := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if c := CtxSetCurrent(ctx); c != Success {
			ch <- c
			return
		}
		ch <- call()
	}()
	return ch
}

// blockTime is how long a call must stay unreturned to count as waiting
// for gated work; returnTime bounds how long one that must not wait takes.
const (
	blockTime  = 300 * time.Millisecond
	returnTime = 20 * time.Second
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

// buffers are the memory a test works on: two device buffers, page-locked
// and pageable host memory, and a non-blocking stream to read device
// memory by without waiting for any other stream.
type buffers struct {
	n               int
	d, d2           uintptr
	pinned, pinned2 Host
	pageable        Host
	peek            uintptr
	pattern         []byte
}

func newBuffers(t *testing.T, n int) *buffers {
	t.Helper()
	b := &buffers{n: n, pattern: randomBytes(n)}
	var c int
	b.d, c = MemAlloc(n)
	ok(t, c, "cuMemAlloc")
	b.d2, c = MemAlloc(n)
	ok(t, c, "cuMemAlloc")
	b.pinned, c = MemHostAlloc(n, 0)
	ok(t, c, "cuMemHostAlloc")
	b.pinned2, c = MemHostAlloc(n, 0)
	ok(t, c, "cuMemHostAlloc")
	b.pageable = CMalloc(n)
	b.peek, c = StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	t.Cleanup(func() {
		CtxSynchronize()
		MemFree(b.d)
		MemFree(b.d2)
		MemFreeHost(b.pinned)
		MemFreeHost(b.pinned2)
		CFree(b.pageable)
		StreamDestroy(b.peek)
	})
	return b
}

// read returns n bytes of device memory at p as they are now, copied on
// the non-blocking stream.
func (b *buffers) read(t *testing.T, p uintptr) []byte {
	t.Helper()
	ok(t, MemcpyDtoHAsync(b.pinned2, p, b.peek), "cuMemcpyDtoHAsync")
	ok(t, StreamSynchronize(b.peek), "cuStreamSynchronize")
	return append([]byte(nil), b.pinned2.Bytes()...)
}

// fill sets device memory at p to the pattern, synchronously.
func (b *buffers) fill(t *testing.T, p uintptr) {
	t.Helper()
	copy(b.pinned.Bytes(), b.pattern)
	ok(t, MemcpyHtoD(p, b.pinned), "cuMemcpyHtoD")
	ok(t, CtxSynchronize(), "cuCtxSynchronize")
}

// fillF32Args are fill_f32's parameters for n contiguous floats at p set
// to v: (char *a, Layout L, float v), Layout being {n, ndim, pad,
// shape[8], strides[8]}.
func fillF32Args(p uintptr, n int, v float32) ([]byte, []int) {
	buf := binary.LittleEndian.AppendUint64(nil, uint64(p))
	layout := make([]byte, 144)
	binary.LittleEndian.PutUint64(layout, uint64(n))
	binary.LittleEndian.PutUint32(layout[8:], 1)
	binary.LittleEndian.PutUint64(layout[16:], uint64(n))
	binary.LittleEndian.PutUint64(layout[16+64:], 4)
	buf = append(buf, layout...)
	buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	return buf, []int{0, 8, 152}
}

// loadFill loads the project's kernels and returns fill_f32.
func loadFill(t *testing.T) uintptr {
	t.Helper()
	m, c := ModuleLoadData([]byte(kernels.Image()))
	ok(t, c, "cuModuleLoadData")
	t.Cleanup(func() { ModuleUnload(m) })
	f, c := ModuleGetFunction(m, "fill_f32")
	ok(t, c, "cuModuleGetFunction")
	return f
}

func float32s(n int, v float32) []byte {
	var out []byte
	for range n {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// The driver's synchronization of each call with the host, as CUDA's "API
// synchronization behavior" states it: with work gated on the legacy
// default stream, a call that the host must wait for does not return
// until the gate opens, and one that is asynchronous returns at once with
// its effect still pending.
func TestAPISynchronization(t *testing.T) {
	bind(t)
	const n = 1 << 12
	fill := loadFill(t)
	cases := []struct {
		name    string
		blocks  bool
		prepare func(t *testing.T, b *buffers)
		call    func(b *buffers) int
		pending func(t *testing.T, b *buffers) bool // the effect is not visible yet
		check   func(t *testing.T, b *buffers)      // after the gate opened and the context synchronized
	}{
		// "For transfers from pageable host memory to device memory, a stream
		// sync is performed before the copy is initiated": the H100 (driver
		// 580.159.04, 2026-11-27) waited.
		{name: "cuMemcpyHtoD from pageable memory synchronizes its stream first", blocks: true,
			call: func(b *buffers) int {
				copy(b.pageable.Bytes(), b.pattern)
				c := MemcpyHtoD(b.d, b.pageable)
				copy(b.pageable.Bytes(), randomBytes(b.n)) // the staged copy must not see this
				return c
			},
			check: func(t *testing.T, b *buffers) {
				assert.Equal(t, b.pattern, b.read(t, b.d), "the bytes as they were at the call")
			}},
		// "For transfers from device memory to pageable host memory, the
		// function will return only once the copy has completed", Async too
		// (the hang of interop's TestImportCAIOnConsumerStream on the H100).
		{name: "cuMemcpyDtoHAsync into pageable memory returns complete", blocks: true,
			prepare: func(t *testing.T, b *buffers) { b.fill(t, b.d) },
			call:    func(b *buffers) int { return MemcpyDtoHAsync(b.pageable, b.d, StreamLegacy) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, b.pattern, b.pageable.Bytes()) }},
		{name: "cuMemcpyHtoD from page-locked memory is synchronous", blocks: true,
			call:  func(b *buffers) int { copy(b.pinned.Bytes(), b.pattern); return MemcpyHtoD(b.d, b.pinned) },
			check: func(t *testing.T, b *buffers) { assert.Equal(t, b.pattern, b.read(t, b.d)) }},
		{name: "cuMemcpyDtoH returns complete", blocks: true,
			prepare: func(t *testing.T, b *buffers) { b.fill(t, b.d) },
			call:    func(b *buffers) int { return MemcpyDtoH(b.pinned2, b.d) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, b.pattern, b.pinned2.Bytes()) }},
		{name: "cuMemcpyDtoD is asynchronous",
			prepare: func(t *testing.T, b *buffers) { b.fill(t, b.d) },
			call:    func(b *buffers) int { return MemcpyDtoD(b.d2, b.d, b.n) },
			pending: func(t *testing.T, b *buffers) bool { return !bytes.Equal(b.read(t, b.d2), b.pattern) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, b.pattern, b.read(t, b.d2)) }},
		{name: "cuMemsetD8 is asynchronous",
			prepare: func(t *testing.T, b *buffers) { b.fill(t, b.d) },
			call:    func(b *buffers) int { return MemsetD8(b.d, 0x5a, b.n) },
			pending: func(t *testing.T, b *buffers) bool { return bytes.Equal(b.read(t, b.d), b.pattern) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, bytes.Repeat([]byte{0x5a}, b.n), b.read(t, b.d)) }},
		{name: "cuMemcpyPeer is asynchronous",
			prepare: func(t *testing.T, b *buffers) { b.fill(t, b.d) },
			call:    func(b *buffers) int { return MemcpyPeer(b.d2, ctx0, b.d, ctx0, b.n) },
			pending: func(t *testing.T, b *buffers) bool { return !bytes.Equal(b.read(t, b.d2), b.pattern) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, b.pattern, b.read(t, b.d2)) }},
		{name: "cuMemcpyHtoDAsync is asynchronous",
			call: func(b *buffers) int {
				copy(b.pinned.Bytes(), b.pattern)
				return MemcpyHtoDAsync(b.d, b.pinned, StreamLegacy)
			},
			pending: func(t *testing.T, b *buffers) bool { return !bytes.Equal(b.read(t, b.d), b.pattern) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, b.pattern, b.read(t, b.d)) }},
		{name: "cuLaunchKernel is asynchronous",
			call: func(b *buffers) int {
				args, offs := fillF32Args(b.d, b.n/4, 2.5)
				return Launch(fill, 4, 256, StreamLegacy, args, offs)
			},
			pending: func(t *testing.T, b *buffers) bool { return !bytes.Equal(b.read(t, b.d), float32s(b.n/4, 2.5)) },
			check:   func(t *testing.T, b *buffers) { assert.Equal(t, float32s(b.n/4, 2.5), b.read(t, b.d)) }},
		{name: "cuMemFree synchronizes", blocks: true,
			call: func(b *buffers) int {
				p, c := MemAlloc(b.n)
				if c != Success {
					return c
				}
				return MemFree(p)
			}},
		{name: "cuMemFreeHost synchronizes", blocks: true,
			call: func(b *buffers) int {
				h, c := MemHostAlloc(b.n, 0)
				if c != Success {
					return c
				}
				return MemFreeHost(h)
			}},
		{name: "cuMemHostUnregister synchronizes", blocks: true,
			call: func(b *buffers) int {
				if c := HostRegister(b.pageable, 0); c != Success {
					return c
				}
				return HostUnregister(b.pageable)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bind(t)
			b := newBuffers(t, n)
			if tc.prepare != nil {
				tc.prepare(t, b)
			}
			gate, c := NewGate(StreamLegacy)
			ok(t, c, "cuLaunchHostFunc")
			defer gate.Release()
			done := onThread(ctx0, func() int { return tc.call(b) })
			if tc.blocks {
				select {
				case c := <-done:
					gate.Release()
					t.Fatalf("returned (%s) while work queued before it was still waiting", ErrorName(c))
				case <-time.After(blockTime):
				}
				gate.Release()
				select {
				case c := <-done:
					ok(t, c, tc.name)
				case <-time.After(returnTime):
					t.Fatalf("did not return once the earlier work was done")
				}
			} else {
				select {
				case c := <-done:
					ok(t, c, tc.name)
					if tc.pending != nil {
						assert.True(t, tc.pending(t, b), "the effect is visible while earlier work still waits: the call did its work before returning")
					}
					gate.Release()
				case <-time.After(returnTime):
					gate.Release()
					t.Fatalf("did not return while earlier work waited: the call waited for the device")
				}
			}
			ok(t, CtxSynchronize(), "cuCtxSynchronize")
			if tc.check != nil {
				tc.check(t, b)
			}
		})
	}
}

// streamCase names a stream of the ordering table.
type streamCase int

const (
	legacy streamCase = iota
	blocking
	blocking2
	nonBlocking
	perThread
)

// CUDA's legacy default stream rule: work on the legacy stream waits for
// the work queued before it on every blocking stream (the per-thread
// default stream is one), and work queued on a blocking stream waits for
// the legacy stream's; non-blocking streams wait for neither, and two
// blocking streams do not wait for each other.
func TestLegacyStreamOrdering(t *testing.T) {
	bind(t)
	cases := []struct {
		name  string
		gated streamCase
		on    streamCase
		waits bool
	}{
		{"the legacy stream waits for a blocking stream", blocking, legacy, true},
		{"the legacy stream waits for the per-thread stream", perThread, legacy, true},
		{"the legacy stream does not wait for a non-blocking stream", nonBlocking, legacy, false},
		{"a blocking stream waits for the legacy stream", legacy, blocking, true},
		{"the per-thread stream waits for the legacy stream", legacy, perThread, true},
		{"a non-blocking stream does not wait for the legacy stream", legacy, nonBlocking, false},
		{"blocking streams do not wait for each other", blocking, blocking2, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bind(t)
			b := newBuffers(t, 1<<12)
			streams := map[streamCase]uintptr{legacy: StreamLegacy, perThread: StreamPerThread}
			for _, k := range []streamCase{blocking, blocking2, nonBlocking} {
				flags := uint32(0)
				if k == nonBlocking {
					flags = StreamNonBlocking
				}
				s, c := StreamCreate(flags)
				ok(t, c, "cuStreamCreate")
				defer StreamDestroy(s)
				streams[k] = s
			}
			ev, c := EventCreate(0)
			ok(t, c, "cuEventCreate")
			defer EventDestroy(ev)
			gate, c := NewGate(streams[tc.gated])
			ok(t, c, "cuLaunchHostFunc")
			defer gate.Release()
			ok(t, MemsetD8Async(b.d, 7, b.n, streams[tc.on]), "cuMemsetD8Async")
			ok(t, EventRecord(ev, streams[tc.on]), "cuEventRecord")
			if tc.waits {
				time.Sleep(blockTime)
				assert.Equal(t, NotReady, EventQuery(ev), "the work ran before the gated stream's")
				gate.Release()
				ok(t, EventSynchronize(ev), "cuEventSynchronize")
			} else {
				done := onThread(ctx0, func() int { return EventSynchronize(ev) })
				select {
				case c := <-done:
					ok(t, c, "cuEventSynchronize")
				case <-time.After(returnTime):
					t.Fatalf("the work waited for the gated stream")
				}
			}
			gate.Release()
			ok(t, CtxSynchronize(), "cuCtxSynchronize")
			assert.Equal(t, bytes.Repeat([]byte{7}, b.n), b.read(t, b.d))
		})
	}
}

// CU_STREAM_PER_THREAD is a different stream on each OS thread: work on one
// thread's does not wait for another thread's.
func TestPerThreadStreams(t *testing.T) {
	bind(t)
	b := newBuffers(t, 1<<12)
	gate, c := NewGate(StreamPerThread) // this thread's
	ok(t, c, "cuLaunchHostFunc")
	defer gate.Release()
	mine, c := EventCreate(0)
	ok(t, c, "cuEventCreate")
	defer EventDestroy(mine)
	ok(t, EventRecord(mine, StreamPerThread), "cuEventRecord")
	done := onThread(ctx0, func() int {
		if c := MemsetD8Async(b.d, 3, b.n, StreamPerThread); c != Success {
			return c
		}
		return StreamSynchronize(StreamPerThread)
	})
	select {
	case c := <-done:
		ok(t, c, "another thread's per-thread stream")
	case <-time.After(returnTime):
		t.Fatalf("another thread's per-thread stream waited for this thread's")
	}
	assert.Equal(t, NotReady, EventQuery(mine), "this thread's stream is still held")
	gate.Release()
	ok(t, EventSynchronize(mine), "cuEventSynchronize")
	assert.Equal(t, bytes.Repeat([]byte{3}, b.n), b.read(t, b.d))
}

// Events: a never-recorded event is complete; one recorded behind held
// work is not until it runs; a stream can wait for one; elapsed time needs
// both recorded, with timing, and complete; recording a destroyed one is
// CUDA_ERROR_CONTEXT_IS_DESTROYED, as the H100 answered.
func TestEvents(t *testing.T) {
	bind(t)
	s, c := StreamCreate(0)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(s)
	s2, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(s2)
	newEvent := func(flags uint32) uintptr {
		e, c := EventCreate(flags)
		ok(t, c, "cuEventCreate")
		t.Cleanup(func() { EventDestroy(e) })
		return e
	}

	fresh := newEvent(0)
	assert.Equal(t, Success, EventQuery(fresh), "a never-recorded event is complete")
	_, c = EventElapsed(fresh, fresh)
	assert.Equal(t, InvalidHandle, c, "elapsed time of events never recorded")

	start, end := newEvent(0), newEvent(0)
	ok(t, EventRecord(start, s), "cuEventRecord")
	gate, c := NewGate(s)
	ok(t, c, "cuLaunchHostFunc")
	defer gate.Release()
	ok(t, EventRecord(end, s), "cuEventRecord")
	after := newEvent(0)
	ok(t, StreamWaitEvent(s2, end), "cuStreamWaitEvent")
	ok(t, EventRecord(after, s2), "cuEventRecord")
	time.Sleep(blockTime)
	assert.Equal(t, NotReady, EventQuery(end), "recorded behind held work")
	assert.Equal(t, NotReady, EventQuery(after), "a stream that waits for an event waits")
	assert.Equal(t, NotReady, StreamQuery(s), "a held stream is busy")
	_, c = EventElapsed(start, end)
	assert.Equal(t, NotReady, c, "elapsed time to an incomplete event")
	gate.Release()
	ok(t, EventSynchronize(after), "cuEventSynchronize")
	ok(t, EventQuery(end), "cuEventQuery")
	ok(t, StreamQuery(s), "cuStreamQuery")
	ms, c := EventElapsed(start, end)
	ok(t, c, "cuEventElapsedTime")
	assert.GreaterOrEqual(t, ms, float32(blockTime.Milliseconds())*0.9, "the held work lies between the events")

	untimed, timed := newEvent(EventDisableTime), newEvent(0)
	ok(t, EventRecord(untimed, s), "cuEventRecord")
	ok(t, EventRecord(timed, s), "cuEventRecord")
	ok(t, StreamSynchronize(s), "cuStreamSynchronize")
	_, c = EventElapsed(untimed, timed)
	assert.Equal(t, InvalidHandle, c, "elapsed time from an event without timing")

	gone, c := EventCreate(0)
	ok(t, c, "cuEventCreate")
	ok(t, EventDestroy(gone), "cuEventDestroy")
	// Undefined behaviour; the H100 (driver 580.159.04, 2026-11-27) answered 709.
	assert.Equal(t, ContextIsDestroyed, EventRecord(gone, s), "recording a destroyed event: %s", ErrorName(EventRecord(gone, s)))
}

// Contexts: the current context belongs to an OS thread; a call with none
// is CUDA_ERROR_INVALID_CONTEXT; flags can be set on an active primary
// context from CUDA 11.0 on (not before); and cuarray shares the primary context with a second library in
// the process, as PyTorch and CuPy use it, without disturbing it.
func TestContexts(t *testing.T) {
	bind(t)
	t.Run("no current context", func(t *testing.T) {
		bind(t)
		c := <-onThread(0, func() int { _, c := MemAlloc(256); return c })
		assert.Equal(t, InvalidContext, c, "cuMemAlloc with no current context: %s", ErrorName(c))
	})
	t.Run("the current context is per thread", func(t *testing.T) {
		bind(t)
		got := <-onThread(0, func() int {
			p, c := CtxGetCurrent()
			if c != Success {
				return c
			}
			if p != 0 {
				return -1
			}
			return Success
		})
		assert.Equal(t, Success, got, "another thread sees no current context")
		cur, c := CtxGetCurrent()
		ok(t, c, "cuCtxGetCurrent")
		assert.Equal(t, ctx0, cur, "this thread's")
	})
	t.Run("flags of an active primary context", func(t *testing.T) {
		bind(t)
		_, active, c := PrimaryState(0)
		ok(t, c, "cuDevicePrimaryCtxGetState")
		require.True(t, active)
		version, c := DriverVersion()
		ok(t, c, "cuDriverGetVersion")
		want := Success // CUDA 11.0 on; the H100, driver 580.159.04, 2026-11-27
		if version < 11000 {
			want = PrimaryContextActive // CUDA 10's reference page
		}
		got := PrimarySetFlags(0, CtxSchedBlocking)
		assert.Equal(t, want, got, "cuDevicePrimaryCtxSetFlags on an active context, driver %d: %s", version, ErrorName(got))
		if got == Success {
			ok(t, PrimarySetFlags(0, 0), "cuDevicePrimaryCtxSetFlags back to the default")
		}
	})
	t.Run("a second library shares the primary context", func(t *testing.T) {
		bind(t)
		// The other library retains the context, allocates and launches.
		other, c := PrimaryRetain(0)
		ok(t, c, "cuDevicePrimaryCtxRetain")
		assert.Equal(t, ctx0, other, "one primary context per device")
		defer PrimaryRelease(0)
		const n = 1 << 10
		p, c := MemAlloc(4 * n)
		ok(t, c, "cuMemAlloc")
		defer MemFree(p)
		args, offs := fillF32Args(p, n, 1.25)
		ok(t, Launch(loadFill(t), 4, 256, StreamLegacy, args, offs), "cuLaunchKernel")
		// cuarray opens the same device and closes it, on another thread.
		failed, observed := failedCalls(func() {
			errs := make(chan error, 1)
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				errs <- openAndClose()
			}()
			require.NoError(t, <-errs)
		})
		if observed {
			assert.Empty(t, failed, "cuarray's Open and Close on a context another library holds made failing driver calls")
		}
		ok(t, CtxSetCurrent(ctx0), "cuCtxSetCurrent")
		ok(t, CtxSynchronize(), "the other library's context still works")
		_, active, c := PrimaryState(0)
		ok(t, c, "cuDevicePrimaryCtxGetState")
		assert.True(t, active, "still active for the other library")
		host := CMalloc(4 * n)
		defer CFree(host)
		ok(t, MemcpyDtoH(host, p), "cuMemcpyDtoH")
		assert.Equal(t, float32s(n, 1.25), host.Bytes(), "the other library's memory is intact")
	})
}

// The primary context's reset destroys what was made in it, for every
// user: run in a child process.
func TestPrimaryContextReset(t *testing.T) {
	bind(t)
	if runChild(t, "reset") {
		return
	}
	p, c := MemAlloc(1 << 12)
	ok(t, c, "cuMemAlloc")
	a, c := PointerGetAttributes(p)
	ok(t, c, "cuPointerGetAttributes")
	require.Equal(t, MemTypeDevice, a.MemType)
	ok(t, PrimaryReset(0), "cuDevicePrimaryCtxReset")
	_, active, c := PrimaryState(0)
	ok(t, c, "cuDevicePrimaryCtxGetState")
	assert.False(t, active, "inactive after a reset")
	a, c = PointerGetAttributes(p)
	ok(t, c, "cuPointerGetAttributes of an address the driver no longer knows")
	assert.Equal(t, 0, a.MemType, "the allocation went with the context")
}

// runChild runs the calling test again in a child process, which does the
// work, and reports true in the parent once the child passed.
func runChild(t *testing.T, name string) bool {
	t.Helper()
	if os.Getenv(childEnv) == name {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+name)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	require.NoError(t, err, "the child failed")
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "the child ran the test")
	return true
}

// openAndClose opens device 0 with the cuda backend and closes it.
func openAndClose() error {
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	return d.Close()
}

// Device memory: allocations 256-byte aligned, counted in cuMemGetInfo,
// found by address (cuMemGetAddressRange, cuPointerGetAttributes).
func TestDeviceMemory(t *testing.T) {
	bind(t)
	for _, n := range []int{1, 255, 256, 257, 1<<20 + 3} {
		p, c := MemAlloc(n)
		ok(t, c, "cuMemAlloc")
		assert.Zero(t, p%256, "an allocation of %d bytes at %#x", n, p)
		base, size, c := MemGetAddressRange(p + uintptr(n-1))
		ok(t, c, "cuMemGetAddressRange")
		assert.Equal(t, p, base, "the allocation holding its last byte")
		assert.GreaterOrEqual(t, size, int64(n))
		a, c := PointerGetAttributes(p + uintptr(n/2))
		ok(t, c, "cuPointerGetAttributes")
		assert.Equal(t, PointerAttrs{MemType: MemTypeDevice, Ordinal: 0, Start: p, Size: size}, a)
		ok(t, MemFree(p), "cuMemFree")
	}
	free, total, c := MemGetInfo()
	ok(t, c, "cuMemGetInfo")
	require.Greater(t, total, int64(64<<20))
	p, c := MemAlloc(64 << 20)
	ok(t, c, "cuMemAlloc")
	free2, _, c := MemGetInfo()
	ok(t, c, "cuMemGetInfo")
	assert.GreaterOrEqual(t, free-free2, int64(64<<20), "64 MiB allocated")
	ok(t, MemFree(p), "cuMemFree")

	host := CMalloc(64)
	defer CFree(host)
	a, c := PointerGetAttributes(uintptr(host.P))
	ok(t, c, "cuPointerGetAttributes of memory the driver does not know")
	assert.Equal(t, 0, a.MemType, "no memory type")
}

// Page-locked host memory: cuMemHostAlloc with every flag, the device
// pointer of mapped memory, and registration with its errors.
func TestHostMemory(t *testing.T) {
	bind(t)
	const n = 1 << 12
	d, c := MemAlloc(n)
	ok(t, c, "cuMemAlloc")
	defer MemFree(d)
	for _, flags := range []uint32{0, HostPortable, HostDeviceMap, HostWriteCombined, HostPortable | HostDeviceMap | HostWriteCombined} {
		h, c := MemHostAlloc(n, flags)
		ok(t, c, "cuMemHostAlloc")
		pattern := randomBytes(n)
		copy(h.Bytes(), pattern)
		a, c := PointerGetAttributes(uintptr(h.P))
		ok(t, c, "cuPointerGetAttributes")
		assert.Equal(t, MemTypeHost, a.MemType, "flags %#x", flags)
		dp, c := HostGetDevicePointer(h)
		if flags&HostDeviceMap != 0 {
			ok(t, c, "cuMemHostGetDevicePointer")
			ok(t, MemcpyDtoD(d, dp, n), "cuMemcpyDtoD from mapped memory")
			back := CMalloc(n)
			ok(t, MemcpyDtoH(back, d), "cuMemcpyDtoH")
			assert.Equal(t, pattern, back.Bytes(), "the device reads mapped memory in place")
			CFree(back)
		} else {
			t.Logf("cuMemHostGetDevicePointer of memory allocated with flags %#x: %s", flags, ErrorName(c))
		}
		ok(t, MemFreeHost(h), "cuMemFreeHost")
	}

	page := os.Getpagesize()
	mem := CMalloc(4 * page)
	defer CFree(mem)
	first := Host{mem.P, page + 100}
	second := Host{unsafe.Add(mem.P, page+200), page}
	ok(t, HostRegister(first, RegisterDeviceMap), "cuMemHostRegister")
	// Registration is by bytes: the H100 (driver 580.159.04, 2026-11-27)
	// registered a range sharing a page but no byte with another.
	ok(t, HostRegister(second, 0), "a page registered twice, no byte twice")
	// A guess no GPU has answered yet: bytes registered twice are refused.
	overlap := Host{unsafe.Add(mem.P, page), 64}
	c = HostRegister(overlap, 0)
	t.Logf("cuMemHostRegister of bytes already registered: %s", ErrorName(c))
	assert.Equal(t, HostAlreadyRegistered, c, "bytes registered twice (a guess)")
	if c == Success {
		HostUnregister(overlap)
	}
	ok(t, HostUnregister(second), "cuMemHostUnregister")
	dp, c := HostGetDevicePointer(first)
	ok(t, c, "cuMemHostGetDevicePointer of registered memory")
	assert.NotZero(t, dp)
	ok(t, HostUnregister(first), "cuMemHostUnregister")
	assert.Equal(t, HostNotRegistered, HostUnregister(first), "unregistering twice")
}

// Pitched copies: the argument checks, and the copies themselves.
func TestPitchedCopies(t *testing.T) {
	bind(t)
	const pitch, rows, width = 36, 8, 20
	src, c := MemAlloc(pitch * rows)
	ok(t, c, "cuMemAlloc")
	defer MemFree(src)
	dst, c := MemAlloc(pitch * rows)
	ok(t, c, "cuMemAlloc")
	defer MemFree(dst)
	host := CMalloc(pitch * rows)
	defer CFree(host)
	pattern := randomBytes(pitch * rows)
	copy(host.Bytes(), pattern)
	ok(t, MemcpyHtoD(src, host), "cuMemcpyHtoD")
	wantRows := func(got []byte) {
		t.Helper()
		for r := range rows {
			assert.Equal(t, pattern[r*pitch:r*pitch+width], got[r*pitch:r*pitch+width], "row %d", r)
		}
	}
	for _, v := range []int{Copy2D, Copy2DUnaligned, Copy2DAsync} {
		assert.Equal(t, InvalidValue, MemcpyDtoD2D(v, dst, src, pitch, pitch, pitch+1, rows, StreamLegacy), "variant %d: width above the pitch", v)
		assert.Equal(t, InvalidValue, MemcpyDtoD2D(v, dst, src, math.MaxInt32+1, pitch, width, 2, StreamLegacy), "variant %d: pitch above the device's maximum", v)
	}
	ok(t, MemcpyDtoD2D(Copy2DUnaligned, dst, src, pitch, pitch, width, rows, StreamLegacy), "cuMemcpy2DUnaligned")
	ok(t, CtxSynchronize(), "cuCtxSynchronize")
	got := CMalloc(pitch * rows)
	defer CFree(got)
	ok(t, MemcpyDtoH(got, dst), "cuMemcpyDtoH")
	wantRows(got.Bytes())

	// cuMemcpy2D and cuMemcpy2DAsync "may fail for pitches not computed by
	// cuMemAllocPitch" within one device; on the H100 (driver 580.159.04,
	// 2026-11-27) both copied at pitch 36.
	for _, v := range []int{Copy2D, Copy2DAsync} {
		ok(t, MemsetD8(dst, 0, pitch*rows), "cuMemsetD8")
		c := MemcpyDtoD2D(v, dst, src, pitch, pitch, width, rows, StreamLegacy)
		ok(t, c, fmt.Sprintf("variant %d, device to device with pitch %d", v, pitch))
		ok(t, CtxSynchronize(), "cuCtxSynchronize")
		ok(t, MemcpyDtoH(got, dst), "cuMemcpyDtoH")
		wantRows(got.Bytes())
	}

	const depth, height = 3, 4
	box, c := MemAlloc(pitch * height * depth)
	ok(t, c, "cuMemAlloc")
	defer MemFree(box)
	box2, c := MemAlloc(pitch * height * depth)
	ok(t, c, "cuMemAlloc")
	defer MemFree(box2)
	big := CMalloc(pitch * height * depth)
	defer CFree(big)
	data := randomBytes(pitch * height * depth)
	copy(big.Bytes(), data)
	ok(t, MemcpyHtoD(box, big), "cuMemcpyHtoD")
	assert.Equal(t, InvalidValue, Memcpy3DDtoD(box2, box, pitch, 2, width, 3, depth), "rows above the slice height")
	ok(t, Memcpy3DDtoD(box2, box, pitch, height, width, 3, depth), "cuMemcpy3D")
	ok(t, CtxSynchronize(), "cuCtxSynchronize")
	ok(t, MemcpyDtoH(big, box2), "cuMemcpyDtoH")
	for z := range depth {
		for y := range 3 {
			o := z*pitch*height + y*pitch
			assert.Equal(t, data[o:o+width], big.Bytes()[o:o+width], "slice %d row %d", z, y)
		}
	}
}

// The project's kernels: the fatbin loads, every kernel is found, and a
// launch runs with the parameters as laid out.
func TestKernels(t *testing.T) {
	bind(t)
	m, c := ModuleLoadData([]byte(kernels.Image()))
	ok(t, c, "cuModuleLoadData")
	defer ModuleUnload(m)
	for _, name := range strings.Fields(`fill_f32 scale_f32 axpy_f32 sum_f32 fill_f64 scale_f64 axpy_f64 sum_f64
		pack_1 unpack_1 pack_2 unpack_2 pack_4 unpack_4 pack_8 unpack_8 pack_16 unpack_16 copy_wide checksum
		trig_table_f32 ramp_taps_f32 ramp_filter_f32 backproject_f32 trig_table_f64 ramp_taps_f64 ramp_filter_f64
		backproject_f64 backproject_tiled_f32 backproject_tiled_f64 phantom_f32 phantom_f64 project_f32 project_f64`) {
		_, c := ModuleGetFunction(m, name)
		assert.Equal(t, Success, c, "%s: %s", name, ErrorName(c))
	}
	_, c = ModuleGetFunction(m, "no_such_kernel")
	assert.Equal(t, NotFound, c)

	const n = 1000
	p, c := MemAlloc(4 * n)
	ok(t, c, "cuMemAlloc")
	defer MemFree(p)
	f, c := ModuleGetFunction(m, "fill_f32")
	ok(t, c, "cuModuleGetFunction")
	v := rand.Float32()
	args, offs := fillF32Args(p, n, v)
	ok(t, Launch(f, 4, 256, StreamLegacy, args, offs), "cuLaunchKernel")
	ok(t, CtxSynchronize(), "cuCtxSynchronize")
	got := CMalloc(4 * n)
	defer CFree(got)
	ok(t, MemcpyDtoH(got, p), "cuMemcpyDtoH")
	assert.Equal(t, float32s(n, v), got.Bytes())
}

// A kernel's bad access spoils the context, as every later call then
// says: misaligned and out-of-range accesses, each in a child process.
func TestKernelFaults(t *testing.T) {
	bind(t)
	for _, tc := range []struct {
		name   string
		offset uintptr // from the start of a live allocation
		freed  bool
		want   int
	}{
		{"misaligned", 2, false, MisalignedAddress},
		{"freed memory", 0, true, IllegalAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bind(t)
			if runChild(t, "fault") {
				return
			}
			f := loadFill(t)
			p, c := MemAlloc(1 << 12)
			ok(t, c, "cuMemAlloc")
			if tc.freed {
				ok(t, MemFree(p), "cuMemFree")
			}
			args, offs := fillF32Args(p+tc.offset, 256, 1)
			ok(t, Launch(f, 1, 256, StreamLegacy, args, offs), "a launch returns when queued")
			c = CtxSynchronize()
			assert.Equal(t, tc.want, c, "cuCtxSynchronize after the fault: %s", ErrorName(c))
			_, c = MemAlloc(256)
			assert.Equal(t, tc.want, c, "cuMemAlloc after the fault: %s", ErrorName(c))
			assert.Equal(t, tc.want, StreamSynchronize(StreamLegacy), "cuStreamSynchronize after the fault")
		})
	}
}

// Bad arguments get the driver's errors.
func TestBadArguments(t *testing.T) {
	bind(t)
	p, c := MemAlloc(1 << 12)
	ok(t, c, "cuMemAlloc")
	defer MemFree(p)
	f := loadFill(t)
	unrecorded, c := EventCreate(0)
	ok(t, c, "cuEventCreate")
	defer EventDestroy(unrecorded)
	plain := CMalloc(64)
	defer CFree(plain)
	for _, tc := range []struct {
		name string
		call func() int
		want int
	}{
		{"cuMemAlloc of 0 bytes", func() int { _, c := MemAlloc(0); return c }, InvalidValue},
		{"cuMemFree inside an allocation", func() int { return MemFree(p + 1) }, InvalidValue},
		{"cuDeviceGet of a device that is not there", func() int { _, c := DeviceGet(9999); return c }, InvalidDevice},
		{"cuStreamCreate with unknown flags", func() int { _, c := StreamCreate(0x80); return c }, InvalidValue},
		{"cuEventCreate with unknown flags", func() int { _, c := EventCreate(0x80); return c }, InvalidValue},
		{"cuModuleLoadData of bytes that are no image", func() int { _, c := ModuleLoadData(randomBytes(64)); return c }, InvalidImage},
		{"cuLaunchKernel with 2048 threads a block", func() int {
			args, offs := fillF32Args(p, 16, 1)
			return Launch(f, 1, 2048, StreamLegacy, args, offs)
		}, InvalidValue},
		{"cuMemHostUnregister of memory never registered", func() int { return HostUnregister(plain) }, HostNotRegistered},
		{"cuEventElapsedTime of events never recorded", func() int { _, c := EventElapsed(unrecorded, unrecorded); return c }, InvalidHandle},
		{"cuMemHostGetDevicePointer of pageable memory", func() int { _, c := HostGetDevicePointer(plain); return c }, InvalidValue},
	} {
		c := tc.call()
		assert.Equal(t, tc.want, c, "%s: got %s, want %s", tc.name, ErrorName(c), ErrorName(tc.want))
	}
}

// IPC handles: one opens in another process and reads the memory; this
// process's own handle is refused, and a stale one opens, as on the H100.
func TestIPC(t *testing.T) {
	bind(t)
	if h := os.Getenv("CUARRAY_CONFORMANCE_IPC_HANDLE"); h != "" {
		ipcChild(t, h)
		return
	}
	const n = 1 << 12
	p, c := MemAlloc(n)
	ok(t, c, "cuMemAlloc")
	defer MemFree(p)
	pattern := randomBytes(n)
	host := CMalloc(n)
	defer CFree(host)
	copy(host.Bytes(), pattern)
	ok(t, MemcpyHtoD(p, host), "cuMemcpyHtoD")
	h, c := IPCGetMemHandle(p)
	ok(t, c, "cuIpcGetMemHandle")

	_, c = IPCOpenMemHandle(h)
	assert.Equal(t, InvalidContext, c, "opening this process's own handle: %s", ErrorName(c))

	cmd := exec.Command(os.Args[0], "-test.run", "^TestIPC$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "CUARRAY_CONFORMANCE_IPC_HANDLE="+hex(h)+":"+hex(pattern[:64]))
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	require.NoError(t, err, "the other process could not read the memory")

	q, c := MemAlloc(n)
	ok(t, c, "cuMemAlloc")
	stale, c := IPCGetMemHandle(q)
	ok(t, c, "cuIpcGetMemHandle")
	ok(t, MemFree(q), "cuMemFree")
	cmd = exec.Command(os.Args[0], "-test.run", "^TestIPC$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "CUARRAY_CONFORMANCE_IPC_HANDLE="+hex(stale)+":stale")
	out, err = cmd.CombinedOutput()
	t.Logf("child with a stale handle:\n%s", out)
	require.NoError(t, err, "the other process's open of a stale handle")
	if emulatedDriver() {
		assert.Contains(t, string(out), "opened a stale handle", "the emulated driver says what it opened")
	}
}

// ipcChild opens the handle the parent passed and checks what it reads, or
// that a stale one opens (what it maps is undefined).
func ipcChild(t *testing.T, arg string) {
	hs, want, _ := strings.Cut(arg, ":")
	h := unhex(hs)
	p, c := IPCOpenMemHandle(h)
	if want == "stale" {
		// The H100 (driver 580.159.04, 2026-11-27) opened it.
		assert.Equal(t, Success, c, "opening a stale handle: %s", ErrorName(c))
		if c == Success {
			ok(t, IPCCloseMemHandle(p), "cuIpcCloseMemHandle of a stale handle")
		}
		return
	}
	ok(t, c, "cuIpcOpenMemHandle")
	got := CMalloc(64)
	defer CFree(got)
	ok(t, MemcpyDtoH(got, p), "cuMemcpyDtoH")
	assert.Equal(t, unhex(want), got.Bytes(), "the other process's bytes")
	ok(t, IPCCloseMemHandle(p), "cuIpcCloseMemHandle")
}

func hex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}

func unhex(s string) []byte {
	out := make([]byte, len(s)/2)
	for i := range out {
		v, _ := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		out[i] = byte(v)
	}
	return out
}
