// Package bench measures cuarray's transfer paths: for each path,
// direction and size, the median bandwidth over repeated copies, its
// ratio to the pinned path and to Go's own copy() measured in the same
// run (and to the PCIe link where it is known), and the ledger's counts
// for the run, which must equal what was asked: bytes copied == bytes
// requested, no hidden extra copies. `cuarray bench` prints it as a
// table, JSON or an SVG chart; bench_test.go has the same measurements as
// Go benchmarks, and fbp_test.go the FBP example's two modes.
//
// peers/ holds the scripts that measure the same work with other
// libraries on a GPU: torch_transfer.py and cupy_transfer.py (the copies),
// torch_d2d.py, torch_fbp.py (the FBP of the same sinograms, saved by
// `examples/fbp -save`), and report.py, which puts them beside cuarray's
// figures as ratios. `make bench-gpu` bundles both sides; `bash
// .gpu/bench.sh` on the GPU machine runs them in one call.
package bench
