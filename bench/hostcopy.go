package bench

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// ThreadCounts returns the goroutine counts the memcpy ceiling is measured
// on: 1, 2, 4, … below GOMAXPROCS, and GOMAXPROCS.
func ThreadCounts() []int {
	procs := runtime.GOMAXPROCS(0)
	var out []int
	for t := 1; t < procs; t *= 2 {
		out = append(out, t)
	}
	return append(out, procs)
}

// MemcpyCeiling measures the host's memory copy from pageable Go memory
// into pinned memory of dev (pinned.Alloc), size bytes split evenly over
// each number of goroutines in threads: the median of reps copies, after
// one that touches the pages. A staged copy gathers (or scatters) exactly
// so, so it cannot beat the fastest of these: the ceiling it is held to.
func MemcpyCeiling(dev driver.Device, size int64, threads []int, reps int) (out []transfer.HostCopy, err error) {
	if size <= 0 || reps <= 0 || len(threads) == 0 {
		return nil, fmt.Errorf("bench: memcpy ceiling of %d bytes, %d repeats, threads %v: %w", size, reps, threads, driver.ErrInvalidValue)
	}
	buf, err := pinned.Alloc(dev, size, 0)
	if err != nil {
		return nil, fmt.Errorf("bench: memcpy ceiling: %w", err)
	}
	defer func() { err = errors.Join(err, buf.Free()) }()
	src, dst := randomBytes(size), buf.Bytes()
	for _, t := range threads {
		if t <= 0 {
			return nil, fmt.Errorf("bench: memcpy ceiling on %d goroutines: %w", t, driver.ErrInvalidValue)
		}
		parallelCopy(dst, src, t)
		times := make([]time.Duration, reps)
		for i := range times {
			start := time.Now()
			parallelCopy(dst, src, t)
			times[i] = time.Since(start)
		}
		out = append(out, transfer.HostCopy{Threads: t, GBps: summarize("memcpy", 0, size, times).GBps})
	}
	if !slices.Equal(dst, src) {
		return nil, errData
	}
	return out, nil
}

// parallelCopy copies src into dst on t goroutines, each a contiguous
// part (4 KiB aligned).
func parallelCopy(dst, src []byte, t int) {
	n := len(src)
	part := (n/t + 4095) &^ 4095
	if t == 1 || part == 0 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += part {
		hi := min(lo+part, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// Ceiling returns the fastest rate in hc, and its goroutines.
func ceilingOf(hc []transfer.HostCopy) transfer.HostCopy {
	var best transfer.HostCopy
	for _, h := range hc {
		if h.GBps > best.GBps {
			best = h
		}
	}
	return best
}
