// Package plan answers "how many slices fit?" before a job starts, and
// splits a 3-D job into chunks that do fit, after httomo's calc_max_slices.
//
// A Method runs on slabs of a 3-D array: a run of whole slices along one
// axis. Each Method declares MaxSlices, which counts every byte a run
// allocates on the device (input, output, temporaries, workspace, each
// rounded up to the 256-byte granule as the device rounds it) and returns
// the most slices that fit in a given number of bytes. Verify checks an
// estimator against the truth: it runs the method on real data, reads the
// ledger's peak, asks MaxSlices with that peak and requires the answer to
// be between 95 % and 100 % of the slices that were run. Chunks plans a
// job from the device's free memory or a limit, less an overhead factor.
//
// A Model is a Method that also lists a run's allocations. It can then be
// estimated in httomo's own convention, Raw mode: bytes as the arrays hold
// them, unrounded, and no overhead factor (Estimate, ChunksRaw,
// ForDeviceRaw), with the arithmetic shown (Plan.Arithmetic: "input 800 +
// output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices"). Identity,
// httomo's worked example, needs only its input and its output.
//
//	p, err := plan.ForDevice(dev, m, [3]int{2048, 720, 1024}, 0, devarray.Float32, nil)
//	for _, c := range p.Chunks { /* run m on slices [c.Start, c.Start+c.Len) */ }
package plan
