// Package transfer moves array data between host and device on every path
// CUDA offers, each recorded in the device's ledger under its name, so a
// program can see which path its bytes took and what it cost:
//
//	direct  the driver copies from or to pageable Go memory (it bounces
//	        the bytes through its own pinned buffer)
//	pinned  DMA from or to page-locked memory (a pinned.Buffer)
//	staged  pageable memory moved through a ring of pinned chunks:
//	        goroutines gather each chunk together, and its DMA starts
//	        while they gather the next, on two or more streams (the
//	        host-side copies are recorded too, as HtoH on the staged path)
//	mapped  a kernel reads or writes mapped host memory in place
//	d2d     within one device
//	peer    between two devices
//	registered  a Go slice page-locked in place (cuMemHostRegister) and
//	        DMAed like a pinned buffer: its bytes recorded as pinned, each
//	        registration as a 0-byte copy on the registered path with its
//	        time; the Copier keeps the registration for later copies, and
//	        the buffer pinned (runtime.Pinner, so the GC cannot free it),
//	        until it evicts it (WithRegisterCache), Unregister or Close
//
// The two sides of a copy are Endpoints: Dev(array), Pinned(buffer, ...),
// Host(slice, ...) or HostBytes. They must have the same dtype and shape
// and may have any strides; host endpoints take theirs from Strided.
// On the direct and pinned paths a strided copy is one driver call where
// a pitched 2-D or 3-D copy can express the two layouts, else one pack
// (or unpack) kernel for a strided device side (recorded as a DtoD kernel
// copy), one gather (or scatter) in host memory for a strided host side,
// and one contiguous copy: devarray.StridedCopy, which DevArray's own
// copies and the C library take too. Never a copy per row or per block.
//
//	c, err := transfer.New(dev)
//	if err != nil { ... }
//	defer c.Close()
//	err = c.Copy(transfer.Dev(a), transfer.Host(xs, 512, 512)) // the planner picks the path
//	choice, err := c.Plan(transfer.Dev(a), transfer.Host(xs, 512, 512))
//	fmt.Println(choice) // "direct: 1.00 MiB of pageable memory on sim, ..."
//	err = c.Copy(transfer.Dev(a), transfer.Host(xs, 512, 512), transfer.Via(transfer.PathStaged))
//
// CopyAsync queues a copy on a stream and returns an Op. The Op holds the
// copy's host memory until the copy has completed, and pinned buffers it
// uses refuse Free (pinned.ErrBusy) until then: freeing early is an error,
// never corruption.
//
// The planner (Plan, PlanHost) picks, of the paths that can move between
// the two sides, the quickest in a cost model: a latency plus the bytes
// over a bandwidth, per path and direction (Profile). DefaultProfile has
// figures for the H100, a generic PCIe GPU and sim; `cuarray bench
// -calibrate` measures the model on this machine and saves it where New
// finds it ($CUARRAY_PROFILE, else the user config dir: ProfilePath). A
// bad or foreign profile is never fatal: Copier.Profile says why it was
// not used, and the defaults plan. The staging ring is sized from the
// profile too: as many goroutines as the host's memory copy needs to
// feed the link, at most GOMAXPROCS, or the ring calibration measured
// fastest.
//
// A Copier keeps its staging ring between copies; a failed staged copy
// frees the ring and every temporary, so nothing stays allocated. The
// package-level Copy makes a Copier for one copy.
package transfer
