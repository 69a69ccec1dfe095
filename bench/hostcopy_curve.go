package bench

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cuarray/cuarray/accounting"
)

// MemoryCopy is how fast this host copies memory at one size: Go's copy
// between two buffers of Bytes bytes mapped outside the Go heap.
// OutOfCache marks the curve's measurement at OutOfCacheBytes, a size
// well above the last-level cache: memory speed.
type MemoryCopy struct {
	Bytes      int64   `json:"bytes"`
	GBps       float64 `json:"GB_per_s"`
	OutOfCache bool    `json:"out_of_cache,omitempty"`
}

// hostCopySizes are the sizes of the host copy curve below the
// out-of-cache one: cache-resident to the last level's reach (which
// 64 MiB often exceeds on a shared machine).
var hostCopySizes = []int64{4 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20}

// measureHostCopy returns this host's memory copy curve: the best batch
// of copies at each of hostCopySizes and, last, with outOfCache (for sim,
// whose ceilings follow the curve), at OutOfCacheBytes (a buffer well
// above the last-level cache: memory speed). Each size is measured once:
// with outOfCache, the sizes of hostCopySizes from OutOfCacheBytes up are
// left to the out-of-cache measurement (64 MiB is both where the
// last-level cache is 32 MiB or less). The copies are between buffers
// mapped outside the Go heap (as the sim backend's memory is), so that
// the race detector's checks of heap copies do not slow them.
//
// The curve is the host's, whatever the device, and is measured once per
// process for each value of outOfCache (about half a second, and seconds
// of page faults on a loaded machine for the out-of-cache buffers): a
// process that runs the bench or its calibration again, as the tests'
// fault sweeps do for every device operation, reuses it. Each call gets
// a copy of its own.
func measureHostCopy(outOfCache bool) ([]MemoryCopy, error) {
	curve, err := hostCopyCurves[boolIndex(outOfCache)]()
	return slices.Clone(curve), err
}

// hostCopyCurves are the two curves measureHostCopy gives, in cache and
// with the out-of-cache size, each measured on first use.
var hostCopyCurves = [2]func() ([]MemoryCopy, error){
	sync.OnceValues(func() ([]MemoryCopy, error) { return measureHostCopyCurve(false) }),
	sync.OnceValues(func() ([]MemoryCopy, error) { return measureHostCopyCurve(true) }),
}

// boolIndex is 1 for true and 0 for false.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// measureHostCopyCurve measures the curve measureHostCopy returns.
func measureHostCopyCurve(outOfCache bool) ([]MemoryCopy, error) {
	var curve []MemoryCopy
	for _, size := range hostCopySizes {
		if outOfCache && size >= OutOfCacheBytes() {
			break
		}
		gbps, err := timeHostCopy(size, max(1, int((8<<20)/size)), 5)
		if err != nil {
			return nil, err
		}
		curve = append(curve, MemoryCopy{Bytes: size, GBps: gbps})
	}
	if !outOfCache {
		return curve, nil
	}
	big, err := outOfCacheCopy()
	if err != nil {
		return nil, err
	}
	return append(curve, big), nil
}

// outOfCacheCopy is the host's copy rate of OutOfCacheBytes, measured
// once per process.
var outOfCacheCopy = sync.OnceValues(func() (MemoryCopy, error) {
	n := OutOfCacheBytes()
	gbps, err := timeHostCopy(n, 1, 2) // the first copy also maps the destination's pages: the second is the figure
	return MemoryCopy{Bytes: n, GBps: gbps, OutOfCache: true}, err
})

// OutOfCacheBytes is the size at which the host's memory copy runs at
// memory speed: twice the largest cache of CPU 0 (as Linux reports it in
// /sys), at least 64 MiB and at most 1 GiB; 256 MiB where no size is
// reported.
func OutOfCacheBytes() int64 {
	llc := lastLevelCacheBytes()
	if llc <= 0 {
		return 256 << 20
	}
	return min(max(2*llc, 64<<20), 1<<30)
}

// lastLevelCacheBytes is the largest cache of CPU 0 that Linux reports,
// or 0 when none is.
func lastLevelCacheBytes() int64 {
	files, _ := filepath.Glob("/sys/devices/system/cpu/cpu0/cache/index*/size")
	var largest int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := accounting.ParseBytes(strings.TrimSpace(string(b))); err == nil { // "491520K": K is KiB
			largest = max(largest, n)
		}
	}
	return largest
}

// timeHostCopy returns the best of batches batches of reps copies of size
// bytes, in GB/s. With fewer than 3 batches the first maps the
// destination's pages as it copies (a fault each), and the best is the
// later.
func timeHostCopy(size int64, reps, batches int) (float64, error) {
	bufs := make([][]byte, 2)
	for i := range bufs {
		b, err := syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return 0, fmt.Errorf("bench: host copy: map %s: %w", accounting.FormatBytes(size), err)
		}
		defer syscall.Munmap(b)
		bufs[i] = b
	}
	src, dst := bufs[0], bufs[1]
	block := randomBytes(min(size, 1<<20)) // fresh random data, repeated: the pages exist
	for off := 0; off < len(src); off += len(block) {
		copy(src[off:], block)
	}
	if batches > 2 {
		copy(dst, src) // the destination's pages too, before the timed copies
	}
	best := 0.0
	for range batches {
		start := time.Now()
		for range reps {
			copy(dst, src)
		}
		if el := time.Since(start).Seconds(); el > 0 {
			best = max(best, float64(size)*float64(reps)/el/1e9)
		}
	}
	if best <= 0 || math.IsInf(best, 0) {
		return 0, errors.New("bench: host copy: no time measured")
	}
	return best, nil
}

// peakCopy is the fastest rate of the curve, 0 for none.
func peakCopy(curve []MemoryCopy) float64 {
	peak := 0.0
	for _, m := range curve {
		peak = max(peak, m.GBps)
	}
	return peak
}
