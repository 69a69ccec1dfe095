// Package cupti counts the bytes the CUDA driver migrates on its own for unified (managed)
// memory, and the page faults, thrashing, throttling and remote mappings that come with them,
// from CUPTI's unified-memory counters (CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER). A copy
// cuarray makes is counted by cuarray itself; a migration the driver makes when a kernel or the
// CPU touches managed memory, or when a prefetch runs, is not a call cuarray makes, and only the
// driver's profiling interface sees it.
//
// What is counted, per record kind (cupti_activity.h, CUDA 11.8, on
// CUpti_ActivityUnifiedMemoryCounter2's value field):
//
//   - BytesHtoD, BytesDtoH, BytesDtoD: "Number of bytes transfered from host to device" (from
//     device to host, from one device to another); for these kinds the value "is the size of the
//     memory region in bytes".
//   - CPUPageFaults: "Number of CPU page faults, this is only supported on 64 bit Linux and Mac
//     platforms": one record a fault (its value is "the program counter for the instruction
//     that caused fault", so records are counted, not values).
//   - GPUPageFaults: "Number of GPU page faults, this is only supported on devices with compute
//     capability 6.0 and higher and 64 bit Linux platforms": one record a faulting page;
//     GPUFaultGroups sums the records' values, "the number of page fault groups for the same
//     page".
//   - Thrashing: "data is frequently accessed by multiple processors and has to be constantly
//     migrated around"; ThrashingBytes sums the regions' sizes.
//   - Throttling: "the driver doesn't service the fault for one of the contending processors
//     for a specific period of time".
//   - RemoteMaps: "the driver tries to pin the memory to a processor for a specific period of
//     time"; RemoteMapBytes sums the regions' sizes.
//
// # Loaded at run time
//
// libcupti is never linked: Open loads it with dlopen and takes its functions with dlsym, so a
// program built with -tags cuda builds and starts on a machine without CUPTI. Open tries the
// path in $CUARRAY_CUPTI alone when it is set (and none when it is set and empty), else libcupti.so and its versioned names, then
// the CUDA toolkit's usual folders. Without CUPTI (or in a build without -tags cuda, or off
// Linux) Open returns an error that matches ErrUnavailable and says why (the dynamic linker's
// message); nothing else changes: cuarray's own ledger counts what it counts either way. Start
// fails the same way, with an *Error that names CUPTI's result, where CUPTI cannot count on
// this machine: CUPTI_ERROR_NOT_INITIALIZED where no GPU answers, the UM_PROFILING_NOT_SUPPORTED
// results on a platform or device without the counters, MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
// where another profiler holds CUPTI.
//
// CUPTI's activity API is one per process: one Counter runs at a time (Start returns ErrBusy
// while another runs). A record is delivered once the driver has finished it: "It is the
// client's responsibility to issue necessary CUDA synchronization calls before calling this
// function [cuptiActivityFlushAll] if all activity records with complete information are
// expected to be delivered" (cupti_activity.h), so synchronize the work before Flush or Stop.
//
//	lib, err := cupti.Open()
//	if err != nil {
//		return err // errors.Is(err, cupti.ErrUnavailable): no migration counts here, and why
//	}
//	c, err := lib.Start()
//	if err != nil {
//		return err
//	}
//	// ... managed memory touched by kernels and the CPU, then synchronized ...
//	t, err := c.Stop()
//	fmt.Println(t.BytesHtoD, t.BytesDtoH, t.GPUPageFaults)
//
// The records are parsed in Go from their bytes (ParseRecords) at the offsets of
// CUpti_ActivityUnifiedMemoryCounter2, which the cuda build checks against the C header's
// offsetof when it compiles. CUPTI 12.8 and later deliver CUpti_ActivityUnifiedMemoryCounter3
// ("CUpti_ActivityUnifiedMemoryCounter2 ... deprecated in 12.8", CUPTI's API reference), whose
// documented fields begin as Counter2's do: the loader keeps the first RecordSize bytes of each
// record, so a newer libcupti is read through the same fields; no run has checked one yet.
package cupti
