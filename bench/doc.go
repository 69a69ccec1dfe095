// Package bench measures cuarray's transfer paths: for each path,
// direction and size, the median bandwidth over repeated copies, its
// ratio to the pinned path and to Go's own copy() measured in the same
// run (and to the PCIe link where it is known), and the ledger's counts
// for the run, which must equal what was asked: bytes copied == bytes
// requested, no hidden extra copies.
//
// Every figure is checked against a physical ceiling before it is
// reported as possible (CeilingsFor): the host link for the paths between
// host and device (-pcie, the device's Info, known models), half the
// device memory's bandwidth for device-to-device copies (a copy reads and
// writes every byte), and on the sim backend its modelled link where it
// has one, else SimCeilingFactor times the host's memory copy at the
// copy's size, from cache-resident sizes to one well above the last-level
// cache (OutOfCacheBytes), which every run measures. The median, the
// fastest repeat and the ledger's own figure (the bytes over the seconds
// it recorded) are each checked; one more than Tolerance above its ceiling
// makes Run return an *ImpossibleError naming the figure and the ceiling,
// and the table's ledger column says ok only when the bytes match and no
// figure is impossible. Copies are timed from completed work: a copy that
// returns before its work is done shows up here as a figure no link or
// memory could reach.
//
// A path whose copy is queued on one stream (direct, pinned, d2d) is also
// timed between two events recorded on that stream around each repeat:
// the device's time without queueing and waiting (Result.EventGBps, also
// checked against the ceiling); copies of at most LatencyMaxBytes report
// their latency in µs. Config.Bidir adds a row per size (Bidir) with a
// pinned HtoD and a pinned DtoH at once on two streams, both copy engines
// busy, against the sum of the one-way pinned figures (Result.VsOneWay).
//
// A run that measures the staged path first measures the host's own
// memory copy from pageable into pinned memory on 1, 2, 4, … GOMAXPROCS
// goroutines (MemcpyCeiling): a staged copy gathers and scatters exactly
// so and cannot beat it, so its rows carry the ratio to that ceiling. For
// each size and direction the report also asks the planner for its pick,
// for pageable and for pinned memory (transfer.Copier.PlanHost), and says
// how much slower it is than the fastest path measured of those it chooses
// from (Report.Plans, the table's planner column).
//
// Calibrate measures the planner's cost model on this machine: the memcpy
// rates, the staging ring that runs fastest, and per path and direction a
// latency and bandwidth fitted to the median times at a few sizes
// (FitCost); `cuarray bench -calibrate` saves it as the profile the
// planner reads (transfer.ProfilePath).
//
// `cuarray bench` prints the report as a table (NarrowTable, which fits
// 120 columns; -wide: Table, every column), JSON or an SVG chart and
// exits 1 on an impossible figure; bench_test.go has the same
// measurements as Go benchmarks, and fbp_test.go the FBP example's two
// modes.
//
// peers/ holds the scripts that measure the same work with other
// libraries on a GPU: torch_transfer.py and cupy_transfer.py (the copies),
// torch_d2d.py, torch_fbp.py (the FBP of the same sinograms, saved by
// `examples/fbp -save`), and report.py, which puts them beside cuarray's
// figures as ratios. `make bench-gpu` bundles both sides; `bash
// .gpu/bench.sh` on the GPU machine runs them in one call.
package bench
