// Package accounting is cuarray's ledger: it counts every allocation, free
// and copy of a device and of the host memory used with it, so that a program
// can prove what its data did — that a GPU-resident pipeline stayed on the
// device, that a view copied nothing, that a failure half-way freed what it
// had allocated.
//
// One Ledger sees device, pinned, mapped, write-combined, registered, managed
// and pageable memory, every copy with its direction, path and duration, and
// the kernel launches per kernel name with the bytes they read and wrote.
// The counters are sharded per core and merged on snapshot, so recording
// scales across goroutines; snapshots are consistent and limits exact under
// any concurrency, and the zero Ledger is ready to use. On top of the
// counters it gives per-kind limits that fail with a typed out-of-memory
// error, nested scopes that count a block of code (with its peak), snapshots
// and diffs, an opt-in event log with leak reports, a text report, JSON, a
// Chrome trace for Perfetto, and expvar publication.
//
// A free is counted when the memory was given back, on every backend: a
// free that fails (after a sticky fault every free fails, as the context
// keeps its memory until it is destroyed) leaves the allocation current,
// outstanding and uncounted among the frees; a later free that succeeds,
// or the device's Close, which releases everything, counts it then. A
// kernel launch's bytes read and written are counted wherever the backend
// knows them: sim and the emulated driver count cuarray's pack and unpack
// kernels alike.
//
//	led := accounting.NewLedger("sim:0")
//	scope := led.Push("upload")
//	// ... allocate and copy through a device that records into led ...
//	snap, _ := scope.Pop()
//	fmt.Println(snap.Kinds[accounting.Device].Peak, snap.CopyTotal(accounting.HtoD).Bytes)
//	fmt.Print(led.Report())
package accounting
