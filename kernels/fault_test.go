package kernels_test

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/kernels"
)

// faultDeadline bounds a workflow of a fault sweep: one that takes longer hangs.
const faultDeadline = 10 * time.Second

// kernelFlow is the state of the kernels' fault workflow: the data it
// starts from (fresh random, the same for the fault-free run and every
// faulted one) and what it observed, in order.
type kernelFlow struct {
	x, y, sino []float32
	obs        []string // what each successful observation read (observe)
}

// observe records what was read, as a digest of its printed values.
func (f *kernelFlow) observe(what string, v any) {
	f.obs = append(f.obs, fmt.Sprintf("%s: %x", what, sha256.Sum256([]byte(fmt.Sprint(v)))))
}

// faultCheck: an error of the workflow must be the fault's.
func faultCheck(t *testing.T, err error, what string) bool {
	t.Helper()
	if err != nil {
		assert.ErrorIs(t, err, device.ErrContextFailed, "%s: the only error here is the fault's", what)
	}
	return err == nil
}

// run runs the workflow on dev: kernels synchronous on a stream, Async on
// it, reductions, a pack, the FBP kernels with a workspace, a projection.
// It reads results back after each call or synchronization that returned
// nil (those reads, copies, are part of the workflow too). It returns at
// the first error, as a program would, after closing what it made.
func (f *kernelFlow) run(t *testing.T, dev *sim.Device) {
	k, err := kernels.New(dev)
	require.NoError(t, err, "New does no device work")
	var arrays []*devarray.DevArray
	ws := accounting.NewWorkspace(dev)
	var s driver.Stream
	defer func() {
		for _, a := range arrays {
			faultCheck(t, a.Free(), "Free")
		}
		faultCheck(t, ws.Free(), "Workspace.Free")
		if s != nil {
			faultCheck(t, s.Close(), "Stream.Close")
		}
		assert.NoError(t, k.Close(), "Kernels.Close")
	}()
	upload := func(data []float32, shape ...int) *devarray.DevArray {
		a, err := devarray.FromHost(dev, data, shape...)
		if !faultCheck(t, err, "FromHost") {
			return nil
		}
		arrays = append(arrays, a)
		return a
	}
	read := func(what string, a *devarray.DevArray) bool {
		got, err := devarray.ToHost[float32](a)
		if faultCheck(t, err, "ToHost "+what) {
			f.observe(what, got)
			return true
		}
		return false
	}
	x := upload(f.x, 16, 24)
	y := upload(f.y, 16, 24)
	if x == nil || y == nil {
		return
	}
	if s, err = dev.NewStream(); !faultCheck(t, err, "NewStream") {
		return
	}
	ks, ka := k.WithStream(s), k.Async(s)
	if !faultCheck(t, ks.Scale(x, 1.5), "Scale on a stream") || !read("scaled x", x) {
		return
	}
	view, err := x.Slice(1, 2, 20, 3)
	require.NoError(t, err)
	if !faultCheck(t, ka.Axpy(y, -0.5, x), "Axpy async") || !faultCheck(t, ka.Fill(view, 2.25), "Fill async") {
		faultCheck(t, s.Synchronize(), "Synchronize after a failed launch")
		return
	}
	if !faultCheck(t, s.Synchronize(), "Synchronize") || !read("axpy y", y) || !read("filled x", x) {
		return
	}
	sum, err := ka.Sum(y)
	if !faultCheck(t, err, "Sum") {
		return
	}
	f.observe("sum", sum)
	cs, err := k.Checksum(x)
	if !faultCheck(t, err, "Checksum") {
		return
	}
	f.observe("checksum", cs)
	tr, err := x.Transpose()
	require.NoError(t, err)
	packed, err := devarray.Empty(dev, devarray.Float32, tr.Shape()...)
	if !faultCheck(t, err, "Empty") {
		return
	}
	arrays = append(arrays, packed)
	if !faultCheck(t, ks.Pack(packed, tr), "Pack") || !read("packed", packed) {
		return
	}
	const slices, angles, det = 2, 9, 12
	sino := upload(f.sino, slices, angles, det)
	if sino == nil {
		return
	}
	img, err := devarray.Empty(dev, devarray.Float32, slices, det, det)
	if !faultCheck(t, err, "Empty") {
		return
	}
	arrays = append(arrays, img)
	if err := ka.RampFilter(sino, ws); !faultCheck(t, err, "RampFilter async") {
		faultCheck(t, s.Synchronize(), "Synchronize after a failed launch")
		return
	}
	if err := ka.Backproject(img, sino, ws); !faultCheck(t, err, "Backproject async") {
		faultCheck(t, s.Synchronize(), "Synchronize after a failed launch")
		return
	}
	if !faultCheck(t, s.Synchronize(), "Synchronize") || !read("backprojected", img) {
		return
	}
	if !faultCheck(t, ks.Project(sino, img, ws), "Project") || !read("projected", sino) {
		return
	}
	if !faultCheck(t, k.Fill(img, -1), "Fill on the default stream") || !read("filled img", img) {
		return
	}
	if dev.Fault() == nil {
		return
	}
	// a fault whose error no call above saw (it cannot be: each call
	// above waited for its work): later launches report it too
	assert.ErrorIs(t, ka.Scale(x, 2), device.ErrContextFailed)
	assert.ErrorIs(t, s.Synchronize(), device.ErrContextFailed)
}

func randomFloat32s(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rand.Float32()*4 - 2
	}
	return v
}

// TestFaultKernels sweeps a sticky fault (sim's FailFault: an illegal
// address in a kernel or copy on a GPU) over every device operation of a
// workflow of kernels on streams, synchronous and Async, with latency 0
// and 1 ms. Every call returns within the deadline; an error is the
// fault's; what a call that returned nil (or a Synchronize after Async
// calls) reports is what the fault-free run reads at the same point; once
// the device faulted later launches and the stream's Synchronize report
// it; Kernels.Close returns; Close frees everything and no goroutine stays.
func TestFaultKernels(t *testing.T) {
	for _, latency := range []time.Duration{0, time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			f := &kernelFlow{x: randomFloat32s(16 * 24), y: randomFloat32s(16 * 24), sino: randomFloat32s(2 * 9 * 12)}
			ref := &kernelFlow{x: f.x, y: f.y, sino: f.sino}
			dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency})
			require.NoError(t, err)
			ref.run(t, dev)
			require.NoError(t, dev.Close())
			require.Len(t, ref.obs, 9, "the fault-free run observes everything")
			assert.Contains(t, ref.obs[3], "sum: ", "its fourth observation is the sum")
			for n := int64(1); ; n++ {
				require.Less(t, n, int64(500), "the workflow never ran without a fault")
				if !kernelsFault(t, latency, n, ref) {
					t.Logf("%d device operations, the fault at each", n-1)
					return
				}
			}
		})
	}
}

// kernelsFault runs the workflow with the nth device operation faulting;
// it reports whether the device faulted.
func kernelsFault(t *testing.T, latency time.Duration, n int64, ref *kernelFlow) bool {
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency, FailFault: n})
	require.NoError(t, err)
	f := &kernelFlow{x: ref.x, y: ref.y, sino: ref.sino}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(t, dev)
	}()
	select {
	case <-done:
	case <-time.After(faultDeadline):
		var b strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
		t.Fatalf("fault=%d: the workflow did not return within %v\n%s", n, faultDeadline, b.String())
	}
	faulted := dev.Fault() != nil
	require.LessOrEqual(t, len(f.obs), len(ref.obs))
	for i, o := range f.obs {
		assert.Equal(t, ref.obs[i], o, "fault=%d: observation %d of a call that returned nil", n, i)
	}
	if faulted {
		assert.Less(t, len(f.obs), len(ref.obs), "fault=%d: the device faulted and every call succeeded", n)
	} else {
		assert.Len(t, f.obs, len(ref.obs), "fault=%d: no fault, every observation", n)
	}
	require.NoError(t, dev.Close())
	snap := dev.Ledger().Snapshot()
	for _, kind := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.Registered} {
		assert.Zero(t, snap.Kinds[kind].Current, "fault=%d: %v bytes after Close", n, kind)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), goroutines, "fault=%d: goroutines left running", n)
	return faulted
}

// TestFaultChecksumAgrees: the checksum a faulted device cannot compute
// is an error, never a value (a guard that a zero from a failed
// reduction's scratch word is not reported as the checksum).
func TestFaultChecksumAgrees(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 1 << 20})
	require.NoError(t, err)
	defer dev.Close()
	k, err := kernels.New(dev)
	require.NoError(t, err)
	defer k.Close()
	data := randomFloat32s(256)
	a, err := devarray.FromHost(dev, data)
	require.NoError(t, err)
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	cs, err := k.Checksum(a)
	require.NoError(t, err)
	assert.Equal(t, kernels.Checksum(raw), cs)
	dev.FailFault(1)
	for _, kk := range []*kernels.Kernels{k, k.Async(nil)} {
		cs, err = kk.Checksum(a)
		assert.ErrorIs(t, err, device.ErrContextFailed)
		assert.Zero(t, cs)
		sum, err := kk.Sum(a)
		assert.ErrorIs(t, err, device.ErrContextFailed)
		assert.Zero(t, sum)
	}
	assert.ErrorIs(t, a.Free(), device.ErrContextFailed, "the free fails after the fault")
}
