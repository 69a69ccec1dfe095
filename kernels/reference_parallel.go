package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// parallel runs f over [0, n) in chunks of grain items on all the cores Go
// may use (GOMAXPROCS), as a GPU runs a kernel's blocks: f(lo, hi) handles
// items lo to hi-1, and no two calls overlap. Chunks are handed out in
// order from a shared counter, so uneven chunks balance. It returns when
// every chunk is done; a panic in one is raised again in the caller (where
// the sim's launch recovers it as the stream's error).
func parallel(n, grain int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	chunks := (n + grain - 1) / grain
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if workers <= 1 {
		f(0, n)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failure atomic.Pointer[any]
	work := func() {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				failure.CompareAndSwap(nil, &r)
			}
		}()
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks || failure.Load() != nil {
				return
			}
			f(c*grain, min((c+1)*grain, n))
		}
	}
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	if r := failure.Load(); r != nil {
		panic(fmt.Sprintf("kernels: reference worker: %v", *r))
	}
}
