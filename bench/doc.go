// Package bench measures cuarray's transfer paths: for each path,
// direction and size, the median bandwidth over repeated copies, its
// ratio to the pinned path and to Go's own copy() measured in the same
// run (and to the PCIe link where it is known), and the ledger's counts
// for the run, which must equal what was asked: bytes copied == bytes
// requested, no hidden extra copies. `cuarray bench` prints it as a
// table, JSON or an SVG chart; bench_test.go has the same measurements as
// Go benchmarks; peers/ holds the PyTorch scripts measured beside it on a GPU.
package bench
