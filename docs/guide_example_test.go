package docs_test

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/kernel"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/examples/ownkernels/ownptx"
	"github.com/cuarray/cuarray/growable"
	"github.com/cuarray/cuarray/interop"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/pool"
	"github.com/cuarray/cuarray/transfer"
)

// Getting started: open a device, put data on it, run a kernel, read it
// back, and ask the ledger what happened.
func Example_gettingStarted() {
	dev, err := device.Open("sim:0") // "" picks cuda:0 in a -tags cuda build with a GPU, else sim:0
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()

	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3) // one allocation, one copy up
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free()

	k, err := kernels.New(dev)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer k.Close()
	if err := k.Scale(a, 10); err != nil { // in place, on the device
		fmt.Println(err)
		return
	}
	sum, _ := k.Sum(a)
	out, _ := devarray.ToHost[float32](a) // one copy down
	// new data of the same type into the same array: one copy up
	if err := devarray.CopyFromHost(a, []float32{6, 5, 4, 3, 2, 1}); err != nil {
		fmt.Println(err)
		return
	}

	s := dev.Ledger().Snapshot()
	fmt.Println(out, sum)
	fmt.Println("allocations:", s.Allocations(), "up:", s.CopyTotal(accounting.HtoD).Bytes, "bytes, down:", s.CopyTotal(accounting.DtoH).Bytes, "bytes")
	// Output:
	// [10 20 30 40 50 60] 210
	// allocations: 1 up: 48 bytes, down: 24 bytes
}

// The default device: Open("") opens cuda:0 where it can, else sim:0;
// OpenDefault also says why it is not cuda:0, and prints nothing.
func Example_defaultDevice() {
	dev, fallback, err := device.OpenDefault() // the device Open("") opens, and why it is not cuda:0
	if err != nil {                            // a GPU that answers but cannot be opened: an error, not a fallback
		fmt.Println(err)
		return
	}
	defer dev.Close()
	if fallback != nil { // sim:0: this build has no CUDA backend (-tags cuda), or no GPU answered
		fmt.Fprintf(os.Stderr, "running on %s: %v\n", dev.Info().Name, fallback)
	}
	fmt.Println("cuda:0, or why not:", dev.Info().Name == "cuda:0" || errors.Is(fallback, device.ErrNoDevice))
	// Output:
	// cuda:0, or why not: true
}

// Zero-copy rules: views share memory and cost nothing; only what is read
// crosses to the host; a borrowed array counts no allocation; freed memory
// cannot be touched.
func Example_zeroCopy() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	a, _ := devarray.FromHost(dev, []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 3, 4)
	before := dev.Ledger().Snapshot()

	t, _ := a.Transpose()         // (4, 3), strides swapped
	col, _ := t.Slice(0, 1, 4, 2) // rows 1 and 3 of the transpose: columns 1 and 3 of a
	flat, _ := a.Reshape(-1)      // contiguous: reshaping is free too
	views := accounting.Diff(before, dev.Ledger().Snapshot())
	fmt.Println(col.Shape(), col.Strides(), col.IsContiguous(), flat.Shape())
	fmt.Println("views: allocations", views.Allocations(), "copies", views.Copied().Count)

	vals, _ := devarray.ToHost[float64](col) // only the 6 elements come down, packed on the device by a kernel
	fmt.Println(vals, dev.Ledger().Snapshot().CopyTotal(accounting.DtoH).Bytes, "bytes down")

	d, _ := flat.Descriptor() // pointer, shape, strides, dtype, device: what other libraries exchange
	mark := dev.Ledger().Snapshot()
	borrowed, _ := devarray.Wrap(dev, d) // someone else's memory, borrowed
	fmt.Println("borrowing allocates:", dev.Ledger().Snapshot().Allocations()-mark.Allocations())

	fmt.Println(errors.Is(col.Free(), devarray.ErrNotOwner)) // only the owner frees
	_ = borrowed.Free()                                      // a borrower's Free lets go, the memory stays
	_ = a.Free()
	_, err := devarray.ToHost[float64](col)
	fmt.Println(errors.Is(err, devarray.ErrFreed), dev.Ledger().Current(accounting.Device))
	// Output:
	// [2 3] [16 32] false [12]
	// views: allocations 0 copies 0
	// [1 5 9 3 7 11] 48 bytes down
	// borrowing allocates: 0
	// true
	// true 0
}

// The alignment rule: device memory is borrowed only at addresses and
// strides that are multiples of its dtype's alignment (NumPy's: half the
// item size for complex types), and a strided copy of such an array moves
// in words no wider than its layout is aligned to.
func Example_alignment() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	buf, _ := devarray.Zeros(dev, devarray.Uint8, 1024)
	defer buf.Free()

	d := devarray.Descriptor{Ptr: buf.Ptr() + 4, Shape: []int{8, 8}, DType: devarray.Complex64, Device: dev.DeviceID()}
	c, err := devarray.Wrap(dev, d) // complex64 aligns to 4 bytes, as in NumPy: 4 (mod 8) is fine
	fmt.Println(devarray.Complex64.Align(), err)
	t, _ := c.Transpose()
	vals, err := devarray.ToHost[complex64](t) // packed in 4-byte words: 8-byte loads would fault a GPU
	fmt.Println(len(vals), err)

	d.DType, d.Ptr = devarray.Float32, buf.Ptr()+2
	_, err = devarray.Wrap(dev, d) // float32 at 2 (mod 4): refused
	fmt.Println(errors.Is(err, devarray.ErrMisaligned))
	// Output:
	// 4 <nil>
	// 64 <nil>
	// true
}

// Choosing a transfer path: the planner picks from the host memory's kind,
// the size and the device, and says why; the ledger records the path each
// byte took.
func Example_transferPath() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	c, _ := transfer.New(dev) // keeps its staging ring and streams between copies
	defer c.Close()
	a, _ := devarray.Empty(dev, devarray.Float32, 1024, 1024)
	defer a.Free()

	host := make([]float32, 1024*1024)
	for i := range host {
		host[i] = float32(i % 7)
	}
	choice, _ := c.Plan(transfer.Dev(a), transfer.Host(host, 1024, 1024))
	fmt.Println(choice)

	buf, _ := pinned.Alloc(dev, 4<<20, 0) // page-locked: the DMA engine reaches it directly
	defer buf.Free()
	copy(buf.Float32(), host)
	choice, _ = c.Plan(transfer.Dev(a), transfer.Pinned(buf, devarray.Float32, 1024, 1024))
	fmt.Println(choice)

	_ = c.Copy(transfer.Dev(a), transfer.Pinned(buf, devarray.Float32, 1024, 1024))                 // the planner's pick
	_ = c.Copy(transfer.Host(host, 1024, 1024), transfer.Dev(a), transfer.Via(transfer.PathStaged)) // or yours
	s := dev.Ledger().Snapshot()
	fmt.Println("up pinned:", s.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "down staged:", s.Copies[accounting.DtoH][accounting.PathStaged].Bytes)
	// Output:
	// direct: 4.00 MiB of pageable memory on sim, which has no DMA engine: staging would only add a copy
	// pinned: 4.00 MiB of page-locked memory: the DMA engine reaches it directly
	// up pinned: 4194304 down staged: 4194304
}

// Memory planning: how many slices of a job fit, from the estimator of its
// method, and the chunks to run it in; the device's ledger limit stands in
// for a smaller GPU.
func Example_memoryPlanning() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	_ = dev.Ledger().SetLimit(accounting.Device, 256<<20) // as if the device had 256 MiB

	// 1000 sinograms of 720 angles × 512 detectors, reconstructed into 512² images
	p, err := plan.ForDevice(dev, kernels.ReconstructMethod, [3]int{1000, 720, 512}, 0, devarray.Float32, plan.Params{"size": 512})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Explain())
	fmt.Println("chunks:", p.Chunks[0], "...", p.Chunks[len(p.Chunks)-1])

	// A method's estimate is held against a real run's peak by plan.Verify.
	res, err := plan.Verify(dev, plan.Case{Method: kernels.ReconstructMethod, Shape: [3]int{4, 90, 64}, DType: devarray.Float32})
	fmt.Println(res.Slices, "slices run, estimate", res.Estimated, "for the measured peak, error:", err)
	// Output:
	// fbp.reconstruct on [1000 720 512] float32 along axis 0: 17 chunks of at most 59 slices (256.00 MiB available / overhead 1.10 fits 61 slices)
	// chunks: {0 59} ... {942 58}
	// 4 slices run, estimate 4 for the measured peak, error: <nil>
}

// Choosing an allocator: arrays allocated and freed in a stream's order
// from the device's default stream-ordered pool, and what the ledger
// shows of them.
func Example_choosingAnAllocator() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	s, _ := dev.NewStream()
	defer s.Close()
	pool, _ := dev.DefaultMemPool()
	_ = pool.SetReleaseThreshold(64 << 20) // keep up to 64 MiB between synchronizes

	for range 3 {
		a, err := devarray.EmptyAsync(dev, s, devarray.Float32, 1024, 1024) // queued on s
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = s.MemsetAsync(a.Ptr(), 0, a.NBytes()) // work on s may use it at once
		_ = a.FreeAsync(s)                        // queued: the next EmptyAsync on s reuses the memory
	}
	_ = s.Synchronize()

	snap := dev.Ledger().Snapshot()
	k := snap.Kinds[accounting.StreamOrdered]
	fmt.Println("stream-ordered:", k.Allocs, "allocations,", k.Frees, "frees, peak", accounting.FormatBytes(k.Peak))
	for _, p := range snap.Pools {
		fmt.Println("pool", p.Name+": reserved", accounting.FormatBytes(p.Reserved), "(high", accounting.FormatBytes(p.ReservedHigh)+"), used",
			accounting.FormatBytes(p.Used), "(high", accounting.FormatBytes(p.UsedHigh)+")")
	}
	// Output:
	// stream-ordered: 3 allocations, 3 frees, peak 4.00 MiB
	// pool default: reserved 4.00 MiB (high 4.00 MiB), used 0 B (high 4.00 MiB)
}

// Choosing an allocator: cuarray's caching pool with its segments from
// the device's default stream-ordered pool.
func Example_cachingPoolOverStreamOrdered() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	mp, _ := dev.DefaultMemPool()
	p := pool.New(dev, pool.FromMemPool(mp)) // segments from cuMemAllocFromPoolAsync
	defer p.Release()

	for range 100 {
		ptr, err := p.Alloc(64 << 10) // the first grows a segment; the others come from the cache
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = p.Free(ptr)
	}

	st := p.Stats()
	fmt.Println("caching pool:", st.Allocs, "allocations,", st.FromDevice, "segment of", accounting.FormatBytes(st.Reserved))
	snap := dev.Ledger().Snapshot()
	k := snap.Kinds[accounting.StreamOrdered]
	fmt.Println("stream-ordered:", k.Allocs, "allocation,", accounting.FormatBytes(k.Cached), "cached by the caching pool")
	for _, ps := range snap.Pools {
		fmt.Println("pool", ps.Name+": reserved", accounting.FormatBytes(ps.Reserved)+", used", accounting.FormatBytes(ps.Used))
	}
	// Output:
	// caching pool: 100 allocations, 1 segment of 2.00 MiB
	// stream-ordered: 1 allocation, 2.00 MiB cached by the caching pool
	// pool default: reserved 2.00 MiB, used 2.00 MiB
}

// Interop, the Go side of a hand-over to Python: the CUDA Array Interface
// that cuarray.py's arrays expose (on sim, NumPy's __array_interface__,
// the same fields), and a DLPack tensor a consumer takes without a copy.
func Example_pythonInterop() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	a, _ := devarray.FromHost(dev, []int32{1, 2, 3, 4, 5, 6}, 2, 3)
	defer a.Free()
	t, _ := a.Transpose()

	cai, _ := interop.ExportCAI(t, 0)
	fmt.Println(cai["shape"], cai["strides"], cai["typestr"], cai["version"])

	dl, err := interop.ExportDLPack(t) // what __dlpack__ puts in its capsule
	if err != nil {
		fmt.Println(err)
		return
	}
	back, _ := interop.ImportDLPack(dev, dl)        // a consumer's view: same pointer, no copy
	allocs := dev.Ledger().Snapshot().Allocations() // still only a's
	vals, _ := devarray.ToHost[int32](back)
	fmt.Println(back.Ptr() == t.Ptr(), vals, "allocations:", allocs)
	_ = back.Free() // runs the tensor's deleter, once
	// Output:
	// [3 2] [4 12] <i4 3
	// true [1 4 2 5 3 6] allocations: 1
}

// When the device faults: an illegal address in a kernel spoils the
// context; every later call fails with device.ErrContextFailed, frees
// included, and only closing the device lets its memory go.
func Example_deviceFault() {
	dev, err := device.Open("sim:0?fail-fault=2") // the 2nd copy, memset or kernel faults
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4}) // copy 1: fine
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = devarray.ToHost[float32](a) // copy 2 faults
	fmt.Println("read back:", errors.Is(err, device.ErrContextFailed))
	fmt.Println("free:", errors.Is(a.Free(), device.ErrContextFailed))
	if errors.Is(err, device.ErrContextFailed) {
		dev.Close() // stop using it: on a GPU, restart the process to use CUDA again
	}
	fmt.Println("device bytes after Close:", dev.Ledger().Current(accounting.Device))
	// Output:
	// read back: true
	// free: true
	// device bytes after Close: 0
}

// Finding stream races: with check=streams, sim judges every operation by
// CUDA's ordering rules when it is queued, and a race fails the call.
func Example_streamRace() {
	dev, err := device.Open("sim:0?check=streams")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free()
	fill, err := dev.NewStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer fill.Close()
	read, err := dev.NewStream()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer read.Close()
	out := make([]byte, a.NBytes())

	// The bug: read copies a while fill may still be writing it.
	if err := fill.MemsetAsync(a.Ptr(), 0, a.NBytes()); err != nil {
		fmt.Println(err)
		return
	}
	err = read.CopyDtoHAsync(out, a.Ptr())
	fmt.Println("race:", errors.Is(err, device.ErrStreamRace))
	var race *sim.StreamRaceError
	if errors.As(err, &race) {
		for _, op := range []sim.RaceOp{race.Op, race.Prev} {
			verb := "reads"
			if op.Write {
				verb = "writes"
			}
			caller, _, _ := strings.Cut(op.Stack[0], "\n") // the program's frame that queued it
			fmt.Printf("%s on %s %s %d bytes, queued in %s\n", op.Kind, op.Stream, verb, op.Hi-op.Lo, caller)
		}
	}

	// The fix: an event orders the copy after the memset.
	filled, err := dev.NewEvent()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer filled.Close()
	fmt.Println(fill.Record(filled), read.WaitEvent(filled))
	fmt.Println("ordered:", read.CopyDtoHAsync(out, a.Ptr()), read.Synchronize())
	// Output:
	// race: true
	// async copy DtoH on stream 0x101 reads 16 bytes, queued in github.com/cuarray/cuarray/docs_test.Example_streamRace
	// async memset on stream 0x100 writes 16 bytes, queued in github.com/cuarray/cuarray/docs_test.Example_streamRace
	// <nil> <nil>
	// ordered: <nil> <nil>
}

// Your own kernels: a SAXPY from PTX, launched on DevArrays in place,
// each array declared read (In) or read and written (InOut); the ledger
// counts the launch.
func Example_ownKernel() {
	dev, err := device.Open("sim:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	mod, err := kernel.Load(dev, ownptx.Saxpy) // saxpy.ptx, embedded; a file of yours: kernel.LoadFile(dev, "saxpy.ptx")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mod.Close()
	saxpy, err := mod.Kernel("saxpy")
	if err != nil {
		fmt.Println(err)
		return
	}
	x, _ := devarray.FromHost(dev, []float32{1, 2, 3, 4})
	defer x.Free()
	y, _ := devarray.FromHost(dev, []float32{10, 20, 30, 40})
	defer y.Free()

	// saxpy(float a, const float *x, float *y, int n), one thread an element
	err = saxpy.Launch(kernel.Grid1D(4, 256),
		kernel.F32(2), kernel.In(x), kernel.InOut(y), kernel.I32(4))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := devarray.ToHost[float32](y)
	fmt.Println(out)
	for _, k := range dev.Ledger().Snapshot().Kernels {
		fmt.Println(k.Name, "launches:", k.Launches, "read:", k.Read, "bytes, written:", k.Written, "bytes")
	}
	// Output:
	// [12 24 36 48]
	// saxpy launches: 1 read: 32 bytes, written: 16 bytes
}

// Your own kernels: a stencil with shared memory, in 16×16 tiles, each
// block given (16+2)² floats of dynamic shared memory for its tile and
// halo.
func Example_ownKernelStencil() {
	dev, err := device.Open("sim:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	mod, err := kernel.Load(dev, ownptx.Stencil) // stencil.ptx, embedded
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mod.Close()
	laplacian, err := mod.Kernel("laplacian")
	if err != nil {
		fmt.Println(err)
		return
	}
	const h, w, tile = 3, 4, 16
	in, _ := devarray.FromHost(dev, []float32{
		1, 2, 3, 4,
		5, 6, 7, 8,
		9, 10, 11, 12}, h, w)
	defer in.Free()
	out, _ := devarray.Empty(dev, devarray.Float32, h, w)
	defer out.Free()

	cfg := kernel.Tiles2D(w, h, tile, tile).WithShared((tile + 2) * (tile + 2) * 4)
	err = laplacian.Launch(cfg, kernel.In(in).Contiguous(), kernel.Out(out).Contiguous(),
		kernel.I32(h), kernel.I32(w))
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := devarray.ToHost[float32](out)
	for r := range h {
		fmt.Println(got[r*w : (r+1)*w])
	}
	// Output:
	// [3 2 1 -5]
	// [-4 0 0 -9]
	// [-21 -14 -15 -29]
}

// Getting started: a view of an array, and what the ledger says about it:
// making views allocates and copies nothing; reading one to the host is
// one counted copy; the device holds a whole granule for a small array.
func Example_firstView() {
	dev, err := device.Open("sim:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free()

	before := dev.Ledger().Snapshot()
	row, _ := a.Index(0, 1) // row 1, [4 5 6]: a view of a's memory
	t, _ := a.Transpose()   // (3, 2), strides swapped: a view too
	made := accounting.Diff(before, dev.Ledger().Snapshot())
	fmt.Println(row.Shape(), t.Shape(), t.Strides(), "allocations:", made.Allocations(), "copies:", made.Copied().Count)

	vals, _ := devarray.ToHost[float32](row) // one counted copy down, of the row's 12 bytes
	s := accounting.Diff(before, dev.Ledger().Snapshot())
	fmt.Println(vals, "down:", s.CopyTotal(accounting.DtoH).Bytes, "bytes")
	fmt.Println("device bytes in use:", dev.Ledger().Current(accounting.Device)) // 24 bytes of data, one 256-byte granule
	// Output:
	// [3] [3 2] [4 12] allocations: 0 copies: 0
	// [4 5 6] down: 12 bytes
	// device bytes in use: 256
}

// Getting started: a kernel of one's own, from PTX, launched on a
// DevArray's row in place and read back.
func Example_firstKernel() {
	dev, err := device.Open("sim:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dev.Close()
	mod, err := kernel.Load(dev, ownptx.Saxpy) // PTX text; yours from a file: kernel.LoadFile(dev, "saxpy.ptx")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mod.Close()
	saxpy, err := mod.Kernel("saxpy") // extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
	if err != nil {
		fmt.Println(err)
		return
	}
	x, _ := devarray.FromHost(dev, []float32{1, 2, 3})
	defer x.Free()
	y, _ := devarray.FromHost(dev, []float32{0, 0, 0, 1, 1, 1}, 2, 3)
	defer y.Free()
	row, _ := y.Index(0, 1) // the kernel works on a view in place

	// y[1] = 10*x + y[1], one thread an element
	err = saxpy.Launch(kernel.Grid1D(3, 256), kernel.F32(10), kernel.In(x), kernel.InOut(row), kernel.I32(3))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := devarray.ToHost[float32](y)
	fmt.Println(out)
	// Output:
	// [0 0 0 11 21 31]
}

// Choosing an allocator: an array that grows in place by virtual memory.
func Example_growInPlace() {
	dev, _ := device.Open("sim:0")
	defer dev.Close()
	before := dev.Ledger().Snapshot()

	// room for 256 MiB of float32, mapped 16 MiB at a time as it grows
	a, err := growable.New(dev, devarray.Float32, 64<<20, growable.ChunkBytes(16<<20))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free()
	at := a.Ptr()
	for n := 4 << 20; n <= 16<<20; n += 4 << 20 { // 16 MiB more each step
		if err := a.Grow(n); err != nil {
			fmt.Println(err)
			return
		}
	}
	v, _ := a.DevArray() // a view of the 16 Mi elements, at the address it always had
	fmt.Println("elements:", v.Size(), "moved:", v.Ptr() != at)

	d := accounting.Diff(before, dev.Ledger().Snapshot())
	fmt.Println("virtual-address:", accounting.FormatBytes(d.Kinds[accounting.VirtualAddress].Current),
		"physical:", accounting.FormatBytes(d.Kinds[accounting.Physical].Current), "in", d.Kinds[accounting.Physical].Allocs, "chunks")
	fmt.Println("device-to-device copies:", d.Copies[accounting.DtoD][accounting.PathD2D].Count)
	// Output:
	// elements: 16777216 moved: false
	// virtual-address: 256.00 MiB physical: 64.00 MiB in 4 chunks
	// device-to-device copies: 0
}

// Pageable memory in place: on a device with pageable memory access a
// kernel updates a Go slice itself; the ledger counts no allocation.
func Example_pageableInPlace() {
	dev, _ := device.Open("sim:0?pageable-access=hmm") // as a GPU with HMM; most GPUs answer none
	defer dev.Close()
	fmt.Println("pageable access:", dev.PageableAccess())

	xs := []float32{1, 2, 3, 4}
	a, err := devarray.FromPageable(dev, xs)
	if errors.Is(err, devarray.ErrNoPageableAccess) {
		a, err = devarray.FromHost(dev, xs) // no access: copy it (or use pinned or managed memory)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Free() // unpins xs; the slice stays yours

	k, _ := kernels.New(dev)
	defer k.Close()
	_ = k.Scale(a, 10) // a kernel writes the Go slice in place; Scale returns when it is done
	fmt.Println(xs, a.Pageable(), "device allocations:", dev.Ledger().Snapshot().Kinds[accounting.Device].Allocs)
	// Output:
	// pageable access: hmm
	// [10 20 30 40] true device allocations: 0
}
