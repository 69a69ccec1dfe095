package bench

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
)

// PageableInPlace is the row of the program's pageable host memory used
// in place (devarray.FromPageable), on a device with pageable memory
// access (HMM, ATS): no copy call and no page-locked or managed memory; a
// kernel reads the Go slice into a device array (HtoD) or writes a device
// array into it (DtoH) across the host link (Config.Pageable).
const PageableInPlace = "pageable-in-place"

// measurePageable times reps moves of pattern between a Go slice, used in
// place, and a device array, in direction dir, after one warm-up move:
// each a pack kernel (kernels.Pack, as the managed rows move theirs) and
// a synchronize. Before each repeat, untimed, the side the move starts
// from holds pattern and the other side other bytes. Each move is
// recorded in the ledger as the mapped path's kernels are, on
// accounting.PathPageable: the row's Counts check that every byte was
// recorded there once and none moved on another path.
func measurePageable(dev driver.Device, k *kernels.Kernels, dir accounting.Direction, pattern []byte, reps int) (res Result, err error) {
	size := int64(len(pattern))
	host := make([]byte, size)
	h, err := devarray.FromPageableBytes(dev, host, devarray.Uint8, int(size))
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, h.Free()) }()
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
	dst, src := a, h
	if dir == accounting.DtoH {
		dst, src = h, a
		if err := a.CopyFrom(pattern); err != nil {
			return Result{}, err
		}
	}
	prepare := func() error {
		if dir == accounting.HtoD {
			copy(host, pattern)
			return dev.Memset(a.Ptr(), ^pattern[0], size)
		}
		for i, b := range pattern {
			host[i] = ^b // every byte differs from what the kernel writes
		}
		return nil
	}
	led := dev.Ledger()
	var diff accounting.Snapshot
	times := make([]time.Duration, reps)
	for i := -1; i < reps; i++ { // i == -1: the warm-up
		if err := errors.Join(prepare(), dev.Synchronize()); err != nil {
			return Result{}, err
		}
		before := led.Snapshot()
		start := time.Now()
		if err := errors.Join(ks.Pack(dst, src), s.Synchronize()); err != nil {
			return Result{}, err
		}
		took := time.Since(start)
		led.RecordCopy(dir, accounting.PathPageable, size, took)
		if i >= 0 {
			times[i] = took
			diff = addSnapshots(diff, accounting.Diff(before, led.Snapshot()))
		}
	}
	if dir == accounting.HtoD {
		err = equalOnDevice(a, pattern)
	} else if !bytes.Equal(host, pattern) {
		err = errData
	}
	if err != nil {
		return Result{}, err
	}
	res = summarize(PageableInPlace, dir, size, times)
	res.setLatency()
	res.Ledger = pageableCounts(diff, dir, size*int64(reps), reps)
	return res, nil
}

// pageableCounts checks the ledger's record of reps timed moves of
// requested bytes in all: every byte on accounting.PathPageable in dir,
// one record per move, and none on another path (no copy call, no
// staging).
func pageableCounts(diff accounting.Snapshot, dir accounting.Direction, requested int64, reps int) *Counts {
	st := diff.Copies[dir][accounting.PathPageable]
	c := &Counts{Requested: requested, Bytes: st.Bytes, Copies: st.Count, Seconds: st.Seconds}
	c.Other = diff.CopyTotal(dir).Bytes - c.Bytes
	c.OK = c.Bytes == requested && c.Copies == int64(reps) && c.Other == 0
	return c
}

// measurePageable adds the pageable-in-place rows, HtoD and DtoH, moving
// pattern, where the device has pageable memory access; elsewhere the
// report's Unsupported says why there is no row.
func (r *Report) measurePageable(dev driver.Device, cfg Config, pattern []byte) (err error) {
	size := int64(len(pattern))
	if a := dev.PageableAccess(); !a.Supported() {
		r.Unsupported = append(r.Unsupported, fmt.Sprintf("%s %s: not supported on this device (no pageable memory access: CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS is 0, as without HMM or ATS)",
			PageableInPlace, accounting.FormatBytes(size)))
		return nil
	}
	k, err := kernels.New(dev)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		res, err := measurePageable(dev, k, dir, pattern, cfg.repeats(size))
		if err != nil {
			return fmt.Errorf("%s %v: %w", PageableInPlace, dir, err)
		}
		r.add(cfg, res)
		releaseHostMemory(size)
	}
	return nil
}
