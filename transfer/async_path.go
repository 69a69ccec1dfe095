package transfer

import "fmt"

// asyncPath keeps CopyAsync asynchronous with pageable memory. A driver
// copy of pageable memory waits: "For transfers from device memory to
// pageable host memory, the function will return only once the copy has
// completed", Async or not, and before a pageable HtoD "a stream sync is
// performed" (the Driver API's API synchronization page; an H100 hung in
// such a copy). So where the planner chose the direct path for a copy
// between pageable memory and the device, the copy takes the staged ring
// instead, whose goroutines move the bytes after CopyAsync has returned,
// as PyTorch's non_blocking copy goes through pinned memory. A copy that
// asked for the direct path is refused with ErrWouldWait: Copy waits for
// it by contract.
func asyncPath(j *job) error {
	if j.choice.Path != PathDirect || (j.dst.side != OnDevice && j.src.side != OnDevice) {
		return nil
	}
	if j.opt.Path == PathDirect {
		return fmt.Errorf("transfer: copy async: the direct path hands pageable memory to the driver, which waits for the copy to end (use Copy, or the staged, registered or pinned path): %w", ErrWouldWait)
	}
	j.choice = Choice{PathStaged, "pageable memory in an async copy: a driver copy of pageable memory waits, so through the staged ring"}
	return nil
}
