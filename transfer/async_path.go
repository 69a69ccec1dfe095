package transfer

import "github.com/cuarray/cuarray/device/driver"

// A driver copy of pageable memory waits: "For transfers from device memory
// to pageable host memory, the function will return only once the copy has
// completed", Async or not, and before a pageable HtoD "a stream sync is
// performed" (the Driver API's API synchronization page; an H100 hung in
// such a copy). CopyAsync never makes its caller wait so: where the
// planner chose the direct path for a copy between pageable memory and
// the device, the copy takes the staged ring instead (asyncPath), as
// PyTorch's non_blocking copy goes through pinned memory; a copy that
// asked for the direct path runs on a goroutine of the copier's, as a
// staged copy does (onGoroutine), so that the driver waits there.

// asyncPath returns the path an async copy takes: the staged ring where the
// planner chose the direct path between pageable memory and the device.
func asyncPath(j *job) {
	if pageableDirect(j) && j.opt.Path == PathAuto {
		j.choice = Choice{PathStaged, "pageable memory in an async copy: a driver copy of pageable memory waits, so through the staged ring"}
	}
}

// onGoroutine reports whether an async copy runs on a goroutine of the
// copier's rather than being queued by the caller: a staged copy, and a
// direct one between pageable memory and the device.
func onGoroutine(j *job) bool { return j.choice.Path == PathStaged || pageableDirect(j) }

// pageableDirect reports whether j hands pageable memory to the driver: the
// direct path between host and device memory.
func pageableDirect(j *job) bool {
	return j.choice.Path == PathDirect && (j.dst.side == OnDevice || j.src.side == OnDevice)
}

// passed waits until stream s has passed the work queued on it so far: a
// direct copy from pageable memory returns once its source is staged, the
// device write still queued. It runs on the copy's goroutine.
func passed(dev driver.Device, s driver.Stream) error {
	ev, err := dev.NewEvent()
	if err != nil {
		return err
	}
	defer ev.Close()
	if err := s.Record(ev); err != nil {
		return err
	}
	return ev.Synchronize()
}
