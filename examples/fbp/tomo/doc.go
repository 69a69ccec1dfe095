// Package tomo is the pipeline of the FBP example (examples/fbp):
// parallel-beam tomography of a 3-D Shepp–Logan phantom, as a stack of
// slices, on any cuarray device.
//
// Acquire makes the data a scanner would: the phantom (kernels.Phantom) and
// its sinograms (kernels.Project), on the device, slab by slab, and hands
// both to the host.
//
// Reconstruct runs filtered backprojection (kernels.RampFilter, then
// kernels.Backproject) on the sinograms, in chunks that plan.ForDevice
// picks for kernels.ReconstructMethod, so that a stack larger than the
// device's free memory (or its ledger limit) still fits. It has two modes,
// on the same chunks and with the same bits as result:
//
//   - Resident keeps each chunk on the device between the two steps: its
//     sinograms go up once and its images come down once. It keeps two
//     chunks in flight on two streams (Options.Streams), so that one
//     chunk's upload and another's download overlap a third's kernels, and
//     times the kernels with events (Result.KernelSeconds). Its clock
//     (Result.Seconds) times the work only: the copier, streams, events,
//     device buffers and workspaces are made before it starts, the
//     volume's pages mapped, and, with the transfer path left to choose,
//     the sinograms and the volume page-locked, so that every chunk's
//     copies are DMA queued on streams and ordered by events, the host
//     waiting only for the downloads (Result.PrepareSeconds is that
//     making; it is all freed after the clock stops).
//   - Staged runs each step the way code that hands arrays through the host
//     does: the step's input goes up from the host and its output comes
//     back, so the sinograms cross three times.
//
// A Resident run may also keep the whole sinogram stack and the whole
// volume in managed memory (Options.Memory, ManagedMemory): each chunk's
// kernels then run in place on views of the managed arrays, the driver
// moving their pages (prefetched on each chunk's stream where the device
// allows it), and the arrays may be larger than the device's memory:
// what must fit is each chunk in flight. Result.Traffic.Managed has what
// the ledger counted of it: the bytes prefetched and migrated, the page
// faults, evictions and read duplicates.
//
// The ledger's counts for each run (Result.Traffic) show what staying on
// the device saved. RelativeRMSE measures a result against the phantom.
//
//	scan, err := tomo.Acquire(dev, tomo.Geometry{Size: 128, Angles: 180, Slices: 16}, nil)
//	res, err := tomo.Reconstruct(dev, scan.Geometry, scan.Sinograms, tomo.Resident, nil)
//	rmse, err := tomo.RelativeRMSE(res.Volume, scan.Phantom)
package tomo
