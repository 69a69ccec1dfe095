//go:build cuda && cudaemu && linux

package emulated

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/ptx"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/kernels"
)

// checkPTXLaunch applies the limits a kernel's PTX sets to a launch:
// .reqntid must be the block, .maxntid bounds it
// (CUDA_ERROR_INVALID_VALUE, as the driver answers a block larger than
// CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK), and static plus dynamic shared
// memory must fit the 48 KiB a block gets without opting in
// (CUDA_ERROR_INVALID_VALUE: "sharedMemBytes ... exceeds the maximum").
func checkPTXLaunch(k *ptx.Kernel, block [3]uint32, shared uint32) cuResult {
	threads := int(block[0]) * int(block[1]) * int(block[2])
	if k.ReqNTID != [3]int{} {
		for i := range 3 {
			if k.ReqNTID[i] != 0 && int(block[i]) != k.ReqNTID[i] {
				return errInvalidValue
			}
		}
	}
	if max := maxThreads(k); threads > max {
		return errInvalidValue
	}
	if int64(k.StaticShared)+int64(shared) > maxSharedPerBlock {
		return errInvalidValue
	}
	return success
}

// maxThreads is CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK of a kernel: the
// product of its .maxntid or .reqntid, else the device's 1024.
func maxThreads(k *ptx.Kernel) int {
	for _, d := range [][3]int{k.ReqNTID, k.MaxNTID} {
		if d != [3]int{} {
			n := 1
			for _, v := range d {
				n *= max(v, 1)
			}
			return min(n, maxThreadsPerBlock)
		}
	}
	return maxThreadsPerBlock
}

// launchPTX queues an interpreted kernel on stream s. The stream race
// checker sees what the launch declared (decl: package kernel's arrays),
// or, for the project's kernels launched without a declaration, what
// their Go references declare they touch; another kernel declares
// nothing. A write into an array declared read-only stops the kernel: a
// misuse, reported, and the stream's error. A fault ends the context's
// use as on a GPU (sticky), with a report naming the kernel, thread,
// address, nearest allocation and PTX line; a shared-memory race is
// undefined behaviour, recorded as a misuse, and the launch goes on.
func launchPTX(c *context, dev *sim.Device, s *stream, f *function, grid, block [3]uint32, shared uint32, buf []byte, decl *Declaration) cuResult {
	k := f.info.prog
	if r := checkPTXLaunch(k, block, shared); r != success {
		return r
	}
	var ranges []driver.Range
	var watches []ptx.Watch
	var arrays []ptx.Array
	if decl != nil {
		ranges = decl.Arrays
		watches = sim.ReadOnlyWatches(ranges)
		arrays = sim.DeclaredArrays(ranges)
	} else if em, err := kernels.Emulate(f.name, buf); err == nil {
		ranges = em.Ranges
	}
	name := f.name
	return s.run(func(st driver.Stream) error {
		err := dev.LaunchInterpreted(st, name, ranges, func(mem *sim.KernelMemory) error {
			stats, err := k.Run(ptx.Launch{Grid: grid, Block: block, DynamicShared: shared, Params: buf, Global: mem, Watches: watches, Arrays: arrays})
			noteLaunch(name, stats)
			if decl != nil {
				read, written := bytesOf(stats)
				decl.Ledger.RecordLaunch(name, read, written)
			}
			return c.kernelFault(err)
		})
		if errors.Is(err, driver.ErrContextFailed) {
			// As for a Go reference's fault: on a GPU the launch has
			// returned before the kernel faults; the fault shows from the
			// next call on.
			return nil
		}
		return err
	})
}

// bytesOf sums a run's bytes read and written over its allocations.
func bytesOf(st ptx.Stats) (read, written int64) {
	for _, n := range st.Read {
		read += n
	}
	for _, n := range st.Written {
		written += n
	}
	return read, written
}

// kernelFault turns an interpreted kernel's error into the context's: a
// fault is sticky, with its report on standard error and in KernelFaults.
// Each result is the driver's for that fault: an access outside live
// memory CUDA_ERROR_ILLEGAL_ADDRESS, a misaligned one
// CUDA_ERROR_MISALIGNED_ADDRESS, a trap CUDA_ERROR_LAUNCH_FAILED (a
// guess: recent drivers may say CUDA_ERROR_ILLEGAL_INSTRUCTION). A barrier
// only part of a block reaches never completes on a GPU: the emulator
// ends it with CUDA_ERROR_LAUNCH_TIMEOUT, what a watchdog would say, a
// guess that keeps CI from hanging.
func (c *context) kernelFault(err error) error {
	if err == nil {
		return nil
	}
	var f *ptx.Fault
	if !errors.As(err, &f) {
		return err
	}
	var r cuResult
	switch f.Kind {
	case ptx.IllegalAddress:
		r = errIllegalAddress
	case ptx.MisalignedAddress:
		r = errMisalignedAddress
	case ptx.BarrierHang:
		r = errLaunchTimeout
	case ptx.SharedRace:
		noteUndefined(fmt.Sprintf("%v: a data race in shared memory: undefined behaviour (compute-sanitizer's racecheck reports it)", f))
		return nil
	case ptx.ReadOnlyWrite, ptx.OutsideExtent, ptx.UnwrittenRead:
		// A GPU lets the access pass; the launch declared it would not
		// happen (a write into an In array, an access outside a declared
		// array, a read of an Out array before the launch writes it), so
		// the emulator stops the kernel and says where.
		noteUndefined(fmt.Sprintf("%v: the launch's declaration of the array (kernel.In, Out, InOut) rules it out", f))
		return fmt.Errorf("%w: %w", f, driver.ErrInvalidValue)
	case ptx.LaunchOutOfResources, ptx.InvalidValue:
		return fmt.Errorf("%w: %w", f, driver.ErrInvalidValue)
	default:
		r = errLaunchFailed
	}
	report := f.Error()
	drv.mu.Lock()
	if len(drv.kernelFaults) < maxFailures {
		drv.kernelFaults = append(drv.kernelFaults, report)
	}
	drv.mu.Unlock()
	fmt.Fprintf(os.Stderr, "cuarray emulated driver: %s\n", report)
	c.fault(r)
	if c.stickyResult() == r {
		c.dev.noteFault(r, report)
	}
	return fmt.Errorf("%w: %w", f, driver.ErrContextFailed)
}

// KernelFaults returns the reports of the interpreted kernels' faults so
// far, oldest first (at most the first 4096).
func KernelFaults() []string {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	return append([]string(nil), drv.kernelFaults...)
}

// noteUndefined records undefined behaviour that is no driver call's
// misuse (a kernel's data race) on the list Misuses returns, so that tests
// fail on it (internal/testdev), and prints it.
func noteUndefined(msg string) {
	drv.mu.Lock()
	if len(drv.misuses) < maxFailures {
		drv.misuses = append(drv.misuses, msg)
	}
	drv.mu.Unlock()
	fmt.Fprintf(os.Stderr, "cuarray emulated driver: %s\n", msg)
}

// KernelStats is what the interpreted launches of one kernel did.
type KernelStats struct {
	Launches         int64
	LaneInstructions int64
	Read, Written    int64 // bytes of global memory
}

// noteLaunch adds one interpreted launch's figures to its kernel's.
func noteLaunch(name string, st ptx.Stats) {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	if drv.launches == nil {
		drv.launches = make(map[string]KernelStats)
	}
	k := drv.launches[name]
	k.Launches++
	k.LaneInstructions += st.LaneInstructions
	read, written := bytesOf(st)
	k.Read += read
	k.Written += written
	drv.launches[name] = k
}

// InterpretedLaunches returns, per kernel name, what its interpreted
// launches did so far in this process.
func InterpretedLaunches() map[string]KernelStats {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	out := make(map[string]KernelStats, len(drv.launches))
	for name, k := range drv.launches {
		out[name] = k
	}
	return out
}

// InterpretedKernelNames returns the names of the kernels launched
// interpreted so far, sorted.
func InterpretedKernelNames() []string {
	l := InterpretedLaunches()
	out := make([]string, 0, len(l))
	for name := range l {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
