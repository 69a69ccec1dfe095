//go:build cuda

package cuda

import (
	"errors"
	"fmt"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// Sharing stream-ordered pools between processes: a pool made with
// handleTypes CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR exports a file
// descriptor ("Given an IPC capable mempool, create an OS handle to share
// the pool with another process.", cuMemPoolExportToShareableHandle), and
// each of its allocations export data ("Constructs shareData_out for
// sharing a specific allocation from an already shared memory pool.",
// cuMemPoolExportPointer); another process imports both.

var _ driver.PoolSharing = (*Device)(nil)

// NewSharedMemPool makes a stream-ordered pool other processes can import
// (cuMemPoolCreate with handleTypes CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).
func (d *Device) NewSharedMemPool() (driver.SharedMemPool, error) {
	var h uintptr
	err := d.call(func() error {
		var c int
		h, c = memPoolCreateShared(d.ordinal)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: new shared mem pool: %w", err)
	}
	p, err := d.addPool(&memPool{d: d, handle: h, shared: true})
	if err != nil {
		return nil, err
	}
	return p.(*memPool), nil
}

// ExportFD returns a new file descriptor of the pool
// (cuMemPoolExportToShareableHandle). A pool made without a handle type
// is refused before the driver is asked ("To create an IPC capable
// mempool, create a mempool with a CUmemAllocationHandleType other than
// CU_MEM_HANDLE_TYPE_NONE.").
func (p *memPool) ExportFD() (int, error) {
	if !p.shared {
		if err := p.usable("export"); err != nil {
			return -1, err
		}
		return -1, fmt.Errorf("cuda: mem pool export %s: %w", p.name, driver.ErrNotShareable)
	}
	fd := -1
	err := p.attr("export", func() int {
		var c int
		fd, c = memPoolExportFD(p.handle)
		return c
	})
	return fd, err
}

// ExportPointer returns the export data of the live stream-ordered
// allocation at ptr (cuMemPoolExportPointer). The driver takes the pointer
// alone: an allocation of another shared pool is exported as that pool's,
// and the importer of this pool refuses it.
func (p *memPool) ExportPointer(ptr devarray.Ptr) (driver.PoolExportData, error) {
	p.d.mu.Lock()
	_, live := p.d.async[ptr]
	p.d.mu.Unlock()
	switch {
	case !live:
		return driver.PoolExportData{}, fmt.Errorf("cuda: mem pool export pointer %v: not the start of a live stream-ordered allocation: %w", ptr, driver.ErrInvalidValue)
	case !p.shared:
		return driver.PoolExportData{}, fmt.Errorf("cuda: mem pool export pointer %v: %s: %w", ptr, p.name, driver.ErrNotShareable)
	}
	var data driver.PoolExportData
	err := p.attr("export pointer", func() int {
		var c int
		data, c = memPoolExportPointer(uintptr(ptr))
		return c
	})
	return data, err
}

// importedPool is a pool another process exported, imported here.
type importedPool struct {
	d      *Device
	name   string
	handle uintptr
	// Guarded by d.ipc.mu:
	destroyed bool
	ptrs      map[uintptr]int64 // imported pointers not yet freed, and their counted sizes
}

// ImportMemPool imports the pool another process exported as fd
// (cuMemPoolImportFromShareableHandle). The driver answers
// CUDA_ERROR_INVALID_VALUE alike for a descriptor that is not a pool's and
// for one whose pool is gone, so both are driver.ErrStaleIPCHandle (an
// invalid value too), as for cuIpcOpenMemHandle; CUDA_ERROR_INVALID_CONTEXT
// is driver.ErrOwnIPCHandle.
func (d *Device) ImportMemPool(fd int) (driver.ImportedMemPool, error) {
	if err := d.closedErr("import mem pool"); err != nil {
		return nil, err
	}
	var h uintptr
	err := d.call(func() error {
		var c int
		h, c = memPoolImportFD(fd)
		return check(c)
	})
	if err != nil {
		return nil, fmt.Errorf("cuda: import mem pool: %w", ipcOpenError(err))
	}
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	d.ipc.importedPools++
	ip := &importedPool{d: d, handle: h, name: fmt.Sprintf("imported-%d", d.ipc.importedPools), ptrs: map[uintptr]int64{}}
	d.ipc.pools = append(d.ipc.pools, ip)
	return ip, nil
}

// Name returns "imported-N".
func (ip *importedPool) Name() string { return ip.name }

// Handle returns the CUmemoryPool.
func (ip *importedPool) Handle() uintptr { return ip.handle }

// ImportPointer maps the allocation data names (cuMemPoolImportPointer),
// counted as kind ipc with the size the driver gives its range.
func (ip *importedPool) ImportPointer(data driver.PoolExportData) (devarray.Ptr, int64, error) {
	d := ip.d
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	if ip.destroyed {
		return 0, 0, fmt.Errorf("cuda: mem pool import pointer: %s was destroyed: %w", ip.name, driver.ErrInvalidValue)
	}
	var p uintptr
	err := d.call(func() error {
		var c int
		p, c = memPoolImportPointer(ip.handle, data)
		return check(c)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("cuda: mem pool import pointer: %w", ipcOpenError(err))
	}
	info, err := d.PointerInfo(devarray.Ptr(p))
	if err == nil {
		err = d.ledger.Alloc(accounting.IPC, p, info.Size)
	}
	if err != nil {
		d.callAlways(func() error { return check(memFreeImported(p)) })
		return 0, 0, fmt.Errorf("cuda: mem pool import pointer: %w", err)
	}
	ip.ptrs[p] = info.Size
	return devarray.Ptr(p), info.Size, nil
}

// FreePointer frees an imported pointer (cuMemFree: "The pointer may be
// freed with cuMemFree or cuMemFreeAsync.", cuMemPoolImportPointer).
func (ip *importedPool) FreePointer(p devarray.Ptr) error {
	d := ip.d
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	return ip.freeLocked(uintptr(p), d.call)
}

// freeLocked frees imported pointer p through call. d.ipc.mu is held.
func (ip *importedPool) freeLocked(p uintptr, call func(func() error) error) error {
	size, ok := ip.ptrs[p]
	if !ok {
		return fmt.Errorf("cuda: mem pool free imported pointer %#x: not imported from %s: %w", p, ip.name, driver.ErrInvalidPointer)
	}
	if err := call(func() error { return check(memFreeImported(p)) }); err != nil {
		return fmt.Errorf("cuda: mem pool free imported pointer %#x: %w", p, err)
	}
	delete(ip.ptrs, p)
	ip.d.ledger.Free(accounting.IPC, p, size)
	return nil
}

// Destroy frees what the pool still has imported and destroys it
// (cuMemPoolDestroy).
func (ip *importedPool) Destroy() error {
	d := ip.d
	d.ipc.mu.Lock()
	defer d.ipc.mu.Unlock()
	return ip.destroyLocked(d.call)
}

// destroyLocked is Destroy with d.ipc.mu held, its driver calls made through call.
func (ip *importedPool) destroyLocked(call func(func() error) error) error {
	if ip.destroyed {
		return nil
	}
	var errs []error
	for p := range ip.ptrs {
		errs = append(errs, ip.freeLocked(p, call))
	}
	ip.destroyed = true
	d := ip.d
	for i, q := range d.ipc.pools {
		if q == ip {
			d.ipc.pools = append(d.ipc.pools[:i], d.ipc.pools[i+1:]...)
			break
		}
	}
	if err := call(func() error { return check(memPoolDestroy(ip.handle)) }); err != nil {
		errs = append(errs, fmt.Errorf("cuda: destroy imported mem pool: %w", err))
	}
	return errors.Join(errs...)
}
