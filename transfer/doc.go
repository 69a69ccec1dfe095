// Package transfer moves array data between host and device on every path
// CUDA offers, each recorded in the device's ledger under its name, so a
// program can see which path its bytes took and what it cost:
//
//	direct  the driver copies from or to pageable Go memory (it bounces
//	        the bytes through its own pinned buffer)
//	pinned  DMA from or to page-locked memory (a pinned.Buffer)
//	staged  pageable memory moved through a ring of pinned chunks:
//	        goroutines gather each chunk while the DMA of others runs on
//	        two or more streams (the host-side copies are recorded too,
//	        as HtoH on the staged path)
//	mapped  a kernel reads or writes mapped host memory in place
//	d2d     within one device
//	peer    between two devices
//
// The two sides of a copy are Endpoints: Dev(array), Pinned(buffer, ...),
// Host(slice, ...) or HostBytes. They must have the same dtype and shape
// and may have any strides; host endpoints take theirs from Strided.
// Strided sides move with the driver's pitched 2-D copies where those can
// express the layout, and through the pack kernel (recorded as a DtoD
// kernel copy) where they cannot.
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
// A Copier keeps its staging ring between copies; a failed staged copy
// frees the ring and every temporary, so nothing stays allocated. The
// package-level Copy makes a Copier for one copy.
package transfer
