package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// ManagedPath is a way of moving the reconstruction's input to the device
// and its output back through managed (unified) memory: no copy call, the
// driver moves the pages a kernel or the host touches.
type ManagedPath string

// The managed paths a bench measures (Config.Managed).
const (
	// ManagedOnDemand: a kernel reads pages resident on the host (HtoD),
	// or the host reads pages resident on the device (DtoH); each page
	// faults and migrates (accounting.PathMigrated).
	ManagedOnDemand ManagedPath = "managed"
	// ManagedPrefetch: cuMemPrefetchAsync moves the pages before the
	// kernel (HtoD) or the host (DtoH) touches them
	// (accounting.PathPrefetch): no faults.
	ManagedPrefetch ManagedPath = "managed-prefetch"
	// ManagedReadMostly: the input is advised read-mostly; the kernel's
	// reads make read-only copies on the device (duplicates), the host's
	// copy stays. HtoD only.
	ManagedReadMostly ManagedPath = "managed-read-mostly"
)

// ManagedPaths are the managed paths, in the order a bench measures them.
var ManagedPaths = []ManagedPath{ManagedOnDemand, ManagedPrefetch, ManagedReadMostly}

// ParseManagedPath returns the managed path of the given name.
func ParseManagedPath(s string) (ManagedPath, error) {
	for _, p := range ManagedPaths {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("bench: unknown managed path %q (want managed, managed-prefetch or managed-read-mostly): %w", s, driver.ErrInvalidValue)
}

// directions returns the directions p moves in: read-mostly is advice for
// the input, HtoD only.
func (p ManagedPath) directions() []accounting.Direction {
	if p == ManagedReadMostly {
		return []accounting.Direction{accounting.HtoD}
	}
	return []accounting.Direction{accounting.HtoD, accounting.DtoH}
}

// measureManaged times reps moves of pattern through managed memory along
// p in direction dir, after one warm-up move. Before each repeat,
// untimed, the pages are put where the move starts from: written by the
// host (HtoD) or by a kernel (DtoH). The timed part of HtoD is a kernel
// reading the managed array into a device array (after a prefetch to the
// device for ManagedPrefetch); of DtoH, the host reading the managed array
// in place into Go memory (after a prefetch to the host), as the pinned
// path's DtoH ends in host memory. The
// ledger's figures are those of the timed parts only, the device
// synchronized before and after each.
func measureManaged(dev driver.Device, k *kernels.Kernels, p ManagedPath, dir accounting.Direction, pattern []byte, reps int) (res Result, err error) {
	size := int64(len(pattern))
	m, err := devarray.EmptyManaged(dev, devarray.AttachGlobal, devarray.Uint8, int(size))
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, m.Free()) }()
	a, err := devarray.Empty(dev, devarray.Uint8, int(size))
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, a.Free()) }()
	s, err := dev.NewStream()
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	ks := k.WithStream(s)
	if p == ManagedReadMostly {
		if err := dev.Advise(m.Ptr(), size, driver.AdviseReadMostly, driver.NoLocation); err != nil {
			return Result{}, err
		}
	}
	here := driver.Location(dev.DeviceID().Ordinal)
	var prepare, move func() error
	if dir == accounting.HtoD {
		prepare = func() error { return writeManaged(m, pattern) }
		move = func() error {
			if p == ManagedPrefetch {
				if err := s.Prefetch(m.Ptr(), size, here); err != nil {
					return err
				}
			}
			if err := ks.Pack(a, m); err != nil {
				return err
			}
			return s.Synchronize()
		}
	} else {
		if err := a.CopyFrom(pattern); err != nil {
			return Result{}, err
		}
		out := make([]byte, size)
		prepare = func() error {
			if err := ks.Pack(m, a); err != nil {
				return err
			}
			return s.Synchronize()
		}
		move = func() error {
			if p == ManagedPrefetch {
				if err := s.Prefetch(m.Ptr(), size, driver.HostLocation); err != nil {
					return err
				}
				if err := s.Synchronize(); err != nil {
					return err
				}
			}
			return readManaged(m, out)
		}
	}
	led := dev.Ledger()
	var diff accounting.Snapshot
	times := make([]time.Duration, reps)
	for i := -1; i < reps; i++ { // i == -1: the warm-up
		if err := errors.Join(prepare(), dev.Synchronize()); err != nil { // the preparation's page moves before the snapshot
			return Result{}, err
		}
		before := led.Snapshot()
		start := time.Now()
		if err := move(); err != nil {
			return Result{}, err
		}
		took := time.Since(start)
		// On a GPU the ledger learns the driver's page moves at a device
		// synchronize (from CUPTI's unified-memory counters): one after the
		// timed part puts them in this repeat's figures.
		if err := dev.Synchronize(); err != nil {
			return Result{}, err
		}
		if i >= 0 {
			times[i] = took
			diff = addSnapshots(diff, accounting.Diff(before, led.Snapshot()))
		}
	}
	if dir == accounting.HtoD {
		err = equalOnDevice(a, pattern)
	} else {
		err = equalManaged(m, pattern)
	}
	if err != nil {
		return Result{}, err
	}
	res = summarize(string(p), dir, size, times)
	res.setLatency()
	res.Ledger = managedCounts(diff, p, dir, size, reps)
	return res, nil
}

// writeManaged writes pattern into the managed array m from the host.
func writeManaged(m *devarray.DevArray, pattern []byte) error {
	v, err := m.HostView(true)
	if err != nil {
		return err
	}
	copy(v, pattern)
	return nil
}

// readManaged copies the managed array m into out on the host, reading it
// in place, as a program reads its output: each page the host touches
// faults and moves unless a prefetch moved it first.
func readManaged(m *devarray.DevArray, out []byte) error {
	v, err := m.HostView(false)
	if err != nil {
		return err
	}
	copy(out, v)
	return nil
}

// equalManaged checks that the managed array m holds want, read in place.
func equalManaged(m *devarray.DevArray, want []byte) error {
	v, err := m.HostView(false)
	if err != nil {
		return err
	}
	if string(v) != string(want) {
		return errData
	}
	return nil
}

// addSnapshots returns the sum of two ledger differences' copies and
// managed page events: the figures of several timed parts.
func addSnapshots(a, b accounting.Snapshot) accounting.Snapshot {
	for dir := range b.Copies {
		for p, st := range b.Copies[dir] {
			a.Copies[dir][p].Bytes += st.Bytes
			a.Copies[dir][p].Count += st.Count
			a.Copies[dir][p].Seconds += st.Seconds
		}
	}
	a.Managed.Faults += b.Managed.Faults
	a.Managed.Duplicates += b.Managed.Duplicates
	a.Managed.Uncounted = b.Managed.Uncounted
	return a
}

// managedCounts checks the ledger's record of reps timed moves of size
// bytes against what was asked: every byte moved once in dir, on
// PathPrefetch for ManagedPrefetch, else on PathMigrated, and none on
// another path. The driver moves whole pages: a move counts from size up
// to size rounded up to migrationGranule. (Read-mostly's copies are
// migrations too: the driver copies the page to the device, and counts a
// duplicate.)
func managedCounts(diff accounting.Snapshot, p ManagedPath, dir accounting.Direction, size int64, reps int) *Counts {
	requested := size * int64(reps)
	lp := accounting.PathMigrated
	if p == ManagedPrefetch {
		lp = accounting.PathPrefetch
	}
	c := &Counts{
		Requested:  requested,
		Bytes:      diff.Copies[dir][lp].Bytes,
		Copies:     diff.Copies[dir][lp].Count,
		Untimed:    true,
		Migrated:   diff.Copies[dir][accounting.PathMigrated].Bytes,
		Prefetched: diff.Copies[dir][accounting.PathPrefetch].Bytes,
		Faults:     diff.Managed.Faults,
		Duplicates: diff.Managed.Duplicates,
	}
	c.Other = diff.CopyTotal(dir).Bytes - c.Bytes
	most := (size + migrationGranule - 1) / migrationGranule * migrationGranule * int64(reps)
	c.OK = c.Bytes >= requested && c.Bytes <= most && c.Other == 0 && diff.Managed.Uncounted == ""
	return c
}

// measureManaged adds a row for each of cfg's managed paths and their
// directions, moving pattern.
func (r *Report) measureManaged(dev driver.Device, cfg Config, pattern []byte) (err error) {
	k, err := kernels.New(dev)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	size := int64(len(pattern))
	for _, p := range cfg.Managed {
		for _, dir := range p.directions() {
			if p == ManagedPrefetch && !dev.ConcurrentManagedAccess() {
				// cuMemPrefetchAsync: "If dstDevice is a GPU, then the device attribute
				// CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS must be non-zero. Additionally,
				// hStream must be associated with a device that has a non-zero value for the
				// device attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS": no
				// prefetch either way on such a device.
				r.Unsupported = append(r.Unsupported, fmt.Sprintf("%s %v %s: not supported on this device (no concurrent managed access, which a prefetch needs)",
					p, dir, accounting.FormatBytes(size)))
				continue
			}
			res, err := measureManaged(dev, k, p, dir, pattern, cfg.repeats(size))
			if err != nil {
				return fmt.Errorf("%s %v: %w", p, dir, err)
			}
			r.add(cfg, res)
			releaseHostMemory(size)
		}
	}
	return nil
}

// migrationGranule is the most a driver moves for one touch: a 2 MiB large
// page, the largest unit the CUDA driver migrates managed memory in
// (sim and the emulated driver move 4 KiB pages).
const migrationGranule = 2 << 20
