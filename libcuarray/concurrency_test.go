//go:build cgo

package main

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
)

// testSpec is the device the library's tests open: CUARRAY_TEST_DEVICE
// (make test-latency sets one whose every stream operation completes 1 ms
// after it is queued), else cuda:0 in a build with -tags cuda where it
// answers (a GPU, or the emulated driver), else sim:0.
func testSpec() string {
	if s := os.Getenv("CUARRAY_TEST_DEVICE"); s != "" {
		return s
	}
	if device.CUDABuilt && cudaAnswers() {
		return "cuda:0"
	}
	return "sim:0?mem=64MiB"
}

// cudaAnswers reports whether cuda:0 opens.
var cudaAnswers = sync.OnceValue(func() bool {
	d, err := device.Open("cuda:0")
	if err != nil {
		return false
	}
	return d.Close() == nil
})

// useIsReentrant reports whether devarray.Use lets its function read the
// state of an array it uses (Err) while another goroutine Holds or Frees
// that array. When Use held the buffer's RWMutex read-locked while its
// function ran, that second read lock waited behind the writer, which
// waited for the first: a synchronous strided copy (transfer's runSync
// calls the kernels, whose guard calls Err) deadlocked against a release,
// an export or the end of an async copy of the same array on another
// thread (found by the hostile-input audit, fixed since). The probe's goroutines stay
// blocked when it does.
func useIsReentrant(t *testing.T, dev uint64) bool {
	h, err := empty(dev, "float32", []int{4}, false)
	require.NoError(t, err)
	e, err := arrayOf(h)
	require.NoError(t, err)
	a := e.arr
	done := make(chan struct{})
	go func() {
		_ = devarray.Use(func() error {
			time.Sleep(20 * time.Millisecond)
			_ = a.Err()
			return nil
		}, a)
		close(done)
	}()
	time.Sleep(5 * time.Millisecond)
	go func() {
		if release, err := a.Hold(); err == nil {
			_ = release()
		}
	}()
	select {
	case <-done:
		require.NoError(t, releaseArray(h))
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// Eight goroutines call every handle operation of the C ABI on one shared
// set of handles, releasing them as they go, as Python threads do through
// ctypes: each call is a result or an error, none deadlocks, and once all
// is released the ledger is back to zero. "contiguous" copies only the
// arrays (a contiguous copy takes no lock twice); "strided" copies their
// transposed views too, which runs devarray's kernels inside devarray.Use.
func TestConcurrentHandleOperations(t *testing.T) {
	dev, err := openDevice(testSpec())
	require.NoError(t, err)
	t.Run("contiguous", func(t *testing.T) { concurrentHandles(t, dev, false) })
	t.Run("strided", func(t *testing.T) {
		require.True(t, useIsReentrant(t, dev), "devarray.Use blocked a Hold of its array while its "+
			"function read the array's state: a synchronous strided copy (kernels' guard calls Err) "+
			"would deadlock against a Free, an export or the end of an async copy on another thread")
		concurrentHandles(t, dev, true)
	})
}

func concurrentHandles(t *testing.T, dev uint64, strided bool) {
	d, err := deviceOf(dev)
	require.NoError(t, err)
	require.NoError(t, pending.Reap())
	before := d.Ledger().Current(accounting.Device)
	var mu sync.Mutex
	var arrays, all []uint64 // the arrays, and the arrays with their views
	add := func(h uint64, isView bool) {
		mu.Lock()
		defer mu.Unlock()
		all = append(all, h)
		if !isView {
			arrays = append(arrays, h)
		}
	}
	pick := func(r *rand.Rand, views bool) uint64 {
		mu.Lock()
		defer mu.Unlock()
		if views {
			return all[r.IntN(len(all))]
		}
		return arrays[r.IntN(len(arrays))]
	}
	for range 8 {
		h, err := empty(dev, "float32", []int{32, 32}, true)
		require.NoError(t, err)
		add(h, false)
	}
	var streams [2]uintptr
	var streamHandles [2]uint64
	for i := range streams {
		streamHandles[i], streams[i], err = newStream(dev)
		require.NoError(t, err)
	}
	const nbytes = 32 * 32 * 4
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 17))
			buf := make([]byte, nbytes)
			for range 300 {
				h := pick(r, true)
				switch r.IntN(12) {
				case 0:
					_ = releaseArray(h)
				case 1:
					if v, err := view(h, []byte(`{"op":"transpose"}`)); err == nil {
						add(v, true)
					}
				case 2:
					_ = copyArrays(pick(r, strided), pick(r, strided))
				case 3:
					_ = copyHost(h, unsafe.Pointer(&buf[0]), nbytes, false)
				case 4:
					_ = copyHost(h, unsafe.Pointer(&buf[0]), nbytes, true)
				case 5:
					_ = copyAsync(pick(r, strided), pick(r, strided), streams[r.IntN(2)])
				case 6:
					consumer := []int64{consumerNoSync, consumerHost, int64(streams[0])}[r.IntN(3)]
					if p, err := toDLPack(pick(r, strided), true, r.IntN(4) == 0, consumer); err == nil {
						deleteDLPack(p)
					}
				case 7:
					_, _ = describe(h)
				case 8:
					_, _ = exportCAI(h, 0, r.IntN(2) == 0)
				case 9:
					_, _ = exportWait(h, []int64{consumerNoSync, consumerHost, int64(streams[1])}[r.IntN(3)])
				case 10:
					_ = syncStream(streamHandles[r.IntN(2)])
				default:
					mu.Lock()
					n := len(all)
					mu.Unlock()
					if n < 64 {
						if a, err := empty(dev, "float32", []int{32, 32}, false); err == nil {
							add(a, false)
						}
					}
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(2 * time.Minute):
		stacks := make([]byte, 1<<20)
		t.Fatalf("the goroutines did not finish in 2 minutes: a deadlock\n%s", stacks[:runtime.Stack(stacks, true)])
	}
	for _, s := range streamHandles {
		require.NoError(t, releaseStream(s))
	}
	for i := len(all) - 1; i >= 0; i-- {
		_ = releaseArray(all[i])
	}
	require.NoError(t, pending.Reap())
	require.Equal(t, before, d.Ledger().Current(accounting.Device), "everything released")
}
