package sim

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// How sim shares a stream-ordered pool between processes, on the
// machinery of its legacy IPC (ipc.go): a shared pool has a memory file of
// its own, the pool file, whose descriptor is what ExportFD hands out (a
// GPU's driver hands out a file descriptor too, for
// CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR). The pool file names the
// exporting process and its device memory file, says whether the pool was
// destroyed, and lists the allocations exported with ExportPointer that
// are still live, one slot each. Export data names the pool (a random
// number), the slot and the allocation. An importer maps the pool file,
// opens the device memory file through /proc/PID/fd once (so an exporter
// that has exited is seen), and maps each allocation it imports: the same
// bytes, no copy. The rules, from the Driver API's pages:
//
//   - "Given an IPC capable mempool, create an OS handle to share the pool
//     with another process." and "To create an IPC capable mempool, create
//     a mempool with a CUmemAllocationHandleType other than
//     CU_MEM_HANDLE_TYPE_NONE." (cuMemPoolExportToShareableHandle): only a
//     pool NewSharedMemPool made exports (driver.ErrNotShareable).
//   - "Constructs shareData_out for sharing a specific allocation from an
//     already shared memory pool." (cuMemPoolExportPointer): the pointer
//     must be a live allocation of the pool, at its start (the start: a
//     guess, the strict reading).
//   - "Imported memory pools do not support creating new allocations. As
//     such imported memory pools may not be used in cuDeviceSetMemPool or
//     cuMemAllocFromPoolAsync calls." (cuMemPoolImportFromShareableHandle):
//     an imported pool is no driver.MemPool, so no stream allocates from it.
//   - "The imported memory must be freed from all importing processes
//     before being freed in the exporting process." (cuMemPoolImportPointer):
//     data of an allocation its exporter has freed, of a destroyed pool or
//     of a process that has exited is refused with
//     driver.ErrStaleIPCHandle. What a GPU's driver does there is not
//     documented: sim takes the strict answer, a guess that conformance's
//     TestObservations logs for a GPU run.
//   - Importing a pool in the process that exported it is refused with
//     driver.ErrOwnIPCHandle, as sim's legacy IPC refuses its own handles
//     (a guess, logged by TestObservations too).

const (
	poolFilePrefix = "/memfd:cuarray-sim-pool"
	poolMagic      = "cuasimP1" // the pool file's first 8 bytes
	exportMagic    = "cuasimE1" // export data's first 8 bytes
	poolSlots      = 1024
	poolHeader     = 64 // magic, pid, device memory file, pool id, destroyed, three spare: uint64 each
	poolFileSize   = poolHeader + poolSlots*ipcSlotBytes
)

// The pool file's header words.
const (
	hdrMagic = iota
	hdrPID
	hdrMemFD
	hdrID
	hdrDestroyed
)

// poolShare is the exporting side of a shared pool: its pool file and the
// slots of the allocations exported. Guarded by the device's poolState.mu.
type poolShare struct {
	fd     int
	file   []byte // the pool file, mapped
	id     uint64
	slots  map[uintptr]int // block address → slot
	serial uint64
}

func (s *poolShare) word(i int) *uint64 {
	return (*uint64)(unsafe.Pointer(&s.file[i*8]))
}

func (s *poolShare) slot(i int) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&s.file[poolHeader+i*ipcSlotBytes])), 4)
}

// NewSharedMemPool makes a stream-ordered pool that other processes can
// import (cuMemPoolCreate with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR).
func (d *Device) NewSharedMemPool() (driver.SharedMemPool, error) {
	if err := ipcSupported(); err != nil {
		return nil, fmt.Errorf("sim: new shared mem pool: %w", err)
	}
	file, fd, err := sharedMemory(poolFilePrefix[len("/memfd:"):], poolFileSize)
	if err != nil {
		return nil, fmt.Errorf("sim: new shared mem pool: %w", err)
	}
	share := &poolShare{fd: fd, file: file, id: rand.Uint64() | 1, slots: map[uintptr]int{}}
	*share.word(hdrPID) = uint64(os.Getpid())
	*share.word(hdrMemFD) = uint64(d.memfd)
	*share.word(hdrID) = share.id
	atomic.StoreUint64(share.word(hdrMagic), binary.LittleEndian.Uint64([]byte(poolMagic)))
	mp, err := d.NewMemPool()
	if err != nil {
		share.close()
		return nil, err
	}
	p := mp.(*memPool)
	d.pools.mu.Lock()
	p.share = share
	d.pools.mu.Unlock()
	return p, nil
}

// close marks the pool destroyed for its importers and releases the pool
// file here. ps.mu is held.
func (s *poolShare) close() {
	if s == nil || s.file == nil {
		return
	}
	atomic.StoreUint64(s.word(hdrDestroyed), 1)
	syscall.Munmap(s.file)
	syscall.Close(s.fd)
	s.file = nil
}

// forget marks the exported allocation at addr freed. ps.mu is held.
func (s *poolShare) forget(addr uintptr) {
	if s == nil || s.file == nil {
		return
	}
	if i, ok := s.slots[addr]; ok {
		atomic.StoreUint64(&s.slot(i)[3], 0)
		delete(s.slots, addr)
	}
}

// ExportFD returns a new descriptor of the pool file
// (cuMemPoolExportToShareableHandle).
func (p *memPool) ExportFD() (int, error) {
	p.d.pools.mu.Lock()
	defer p.d.pools.mu.Unlock()
	if err := p.usable("export"); err != nil {
		return -1, err
	}
	if p.share == nil {
		return -1, fmt.Errorf("sim: mem pool export %s: %w", p.name, driver.ErrNotShareable)
	}
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(p.share.fd), syscall.F_DUPFD_CLOEXEC, 0)
	if errno != 0 {
		return -1, fmt.Errorf("sim: mem pool export %s: duplicate the pool file: %w", p.name, errno)
	}
	return int(fd), nil
}

// ExportPointer returns the export data of the live allocation at ptr,
// which p handed out (cuMemPoolExportPointer).
func (p *memPool) ExportPointer(ptr devarray.Ptr) (driver.PoolExportData, error) {
	data, pool, err := p.d.exportPoolPointer(ptr)
	if err == nil && pool != p {
		err = fmt.Errorf("sim: mem pool export pointer %v: an allocation of %s, not of %s: %w", ptr, pool.name, p.name, driver.ErrInvalidValue)
	}
	if err != nil {
		return driver.PoolExportData{}, err
	}
	return data, nil
}

// ExportPoolPointer returns the export data of the live stream-ordered
// allocation at ptr, whichever shared pool of the device handed it out
// (cuMemPoolExportPointer, which takes the pointer alone).
func (d *Device) ExportPoolPointer(ptr devarray.Ptr) (driver.PoolExportData, error) {
	data, _, err := d.exportPoolPointer(ptr)
	return data, err
}

func (d *Device) exportPoolPointer(ptr devarray.Ptr) (driver.PoolExportData, *memPool, error) {
	if err := d.checkFault("mem pool export pointer"); err != nil {
		return driver.PoolExportData{}, nil, err
	}
	ps := &d.pools
	ps.mu.Lock()
	defer ps.mu.Unlock()
	b := ps.blocks[uintptr(ptr)]
	if b == nil || !b.live {
		return driver.PoolExportData{}, nil, fmt.Errorf("sim: mem pool export pointer %v: not the start of a live stream-ordered allocation: %w", ptr, driver.ErrInvalidValue)
	}
	p := b.pool
	if err := p.usable("export pointer"); err != nil {
		return driver.PoolExportData{}, nil, err
	}
	s := p.share
	if s == nil {
		return driver.PoolExportData{}, p, fmt.Errorf("sim: mem pool export pointer %v: %s: %w", ptr, p.name, driver.ErrNotShareable)
	}
	i, ok := s.slots[b.addr]
	if !ok {
		i = -1
		for j := range poolSlots {
			if atomic.LoadUint64(&s.slot(j)[3]) == 0 {
				i = j
				break
			}
		}
		if i < 0 {
			return driver.PoolExportData{}, p, fmt.Errorf("sim: mem pool export pointer %v: all %d export slots of %s are in use: %w", ptr, poolSlots, p.name, driver.ErrOutOfMemory)
		}
		s.serial++
		sl := s.slot(i)
		sl[0], sl[1], sl[2] = uint64(b.addr-d.base), uint64(b.asked), s.serial
		atomic.StoreUint64(&sl[3], 1)
		s.slots[b.addr] = i
	}
	sl := s.slot(i)
	var data driver.PoolExportData
	copy(data[:8], exportMagic)
	for k, v := range []uint64{s.id, uint64(i), sl[0], sl[1], sl[2]} {
		binary.LittleEndian.PutUint64(data[8+8*k:], v)
	}
	return data, p, nil
}

// exportData is the content of sim's export data.
type exportData struct {
	id         uint64
	slot       int
	off, size  int64
	serial     uint64
	handleForm driver.IPCHandle // the data as a key of the ipcState's (its last 16 bytes are free)
}

func parseExportData(data driver.PoolExportData) (exportData, error) {
	if string(data[:8]) != exportMagic {
		return exportData{}, fmt.Errorf("not export data of a sim pool: %w", driver.ErrInvalidValue)
	}
	w := func(k int) uint64 { return binary.LittleEndian.Uint64(data[8+8*k:]) }
	e := exportData{id: w(0), slot: int(w(1)), off: int64(w(2)), size: int64(w(3)), serial: w(4), handleForm: driver.IPCHandle(data)}
	if w(1) >= poolSlots || e.off < 0 || e.size <= 0 {
		return exportData{}, fmt.Errorf("export data with slot %d, offset %d, size %d: %w", w(1), e.off, e.size, driver.ErrInvalidValue)
	}
	return e, nil
}

// importedPool is another process's shared pool, imported here.
type importedPool struct {
	d         *Device
	name      string
	handle    uintptr
	file      []byte // the pool file, mapped read-only
	mem       int    // the exporter's device memory file, opened here
	memLen    int64
	pid       int32
	memFD     int32 // the exporter's number for its device memory file
	id        uint64
	destroyed bool // guarded by the device's ipcState.openMu
}

var _ driver.PoolSharing = (*Device)(nil)

func (ip *importedPool) word(i int) uint64 {
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&ip.file[i*8])))
}

// ImportMemPool imports the pool another process exported as fd
// (cuMemPoolImportFromShareableHandle): "A recipient process can convert
// the shareable handle into a mempool with
// cuMemPoolImportFromShareableHandle."
func (d *Device) ImportMemPool(fd int) (driver.ImportedMemPool, error) {
	if err := ipcSupported(); err != nil {
		return nil, fmt.Errorf("sim: import mem pool: %w", err)
	}
	if err := d.checkFault("import mem pool"); err != nil {
		return nil, err
	}
	ip, err := d.importPool(fd)
	if err != nil {
		return nil, fmt.Errorf("sim: import mem pool: %w", err)
	}
	return ip, nil
}

func (d *Device) importPool(fd int) (*importedPool, error) {
	target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return nil, fmt.Errorf("descriptor %d: %v: %w", fd, err, driver.ErrInvalidValue)
	}
	if !strings.HasPrefix(target, poolFilePrefix) {
		return nil, fmt.Errorf("foreign descriptor: %d is %q, not a sim pool's: %w", fd, target, driver.ErrInvalidValue)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Size != poolFileSize {
		return nil, fmt.Errorf("foreign descriptor: %d holds %d bytes, a pool file %d: %w", fd, st.Size, poolFileSize, driver.ErrInvalidValue)
	}
	file, err := syscall.Mmap(fd, 0, poolFileSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the pool file: %v: %w", err, driver.ErrInvalidValue)
	}
	ip := &importedPool{d: d, file: file, mem: -1}
	ok := false
	defer func() {
		if !ok {
			ip.release()
		}
	}()
	if ip.word(hdrMagic) != binary.LittleEndian.Uint64([]byte(poolMagic)) {
		return nil, fmt.Errorf("foreign descriptor: %d is not a sim pool file: %w", fd, driver.ErrInvalidValue)
	}
	ip.pid, ip.memFD, ip.id = int32(ip.word(hdrPID)), int32(ip.word(hdrMemFD)), ip.word(hdrID)
	if int(ip.pid) == os.Getpid() {
		return nil, fmt.Errorf("the pool was exported by this process: %w", driver.ErrOwnIPCHandle)
	}
	if ip.word(hdrDestroyed) != 0 {
		return nil, fmt.Errorf("process %d destroyed the pool: %w", ip.pid, driver.ErrStaleIPCHandle)
	}
	if ip.mem, err = openFile(ip.pid, ip.memFD, syscall.O_RDWR, 0); err != nil {
		return nil, err // the exporter has exited: ErrStaleIPCHandle
	}
	if err := syscall.Fstat(ip.mem, &st); err != nil {
		return nil, fmt.Errorf("the device memory file: %w", err)
	}
	ip.memLen = st.Size
	d.ipc.mu.Lock()
	d.ipc.importedPools++
	ip.handle = uintptr(d.ipc.importedPools)
	ip.name = fmt.Sprintf("imported-%d", d.ipc.importedPools)
	d.ipc.pools = append(d.ipc.pools, ip)
	d.ipc.mu.Unlock()
	ok = true
	return ip, nil
}

// closeImportedPools destroys the pools ImportMemPool imported, at Close.
func (d *Device) closeImportedPools() {
	d.ipc.mu.Lock()
	pools := slices.Clone(d.ipc.pools)
	d.ipc.mu.Unlock()
	for _, ip := range pools {
		ip.Destroy()
	}
}

// release unmaps the pool file and closes the device memory file.
func (ip *importedPool) release() {
	if ip.file != nil {
		syscall.Munmap(ip.file)
		ip.file = nil
	}
	if ip.mem >= 0 {
		syscall.Close(ip.mem)
		ip.mem = -1
	}
}

// Name returns "imported-N".
func (ip *importedPool) Name() string { return ip.name }

// Handle returns the pool's number among the device's imported pools, from 1.
func (ip *importedPool) Handle() uintptr { return ip.handle }

// exporterAlive reports whether the exporting process still holds the
// device memory file this pool opened (a new process with its number does not).
func (ip *importedPool) exporterAlive() bool {
	var held, now syscall.Stat_t
	if syscall.Fstat(ip.mem, &held) != nil || syscall.Stat(fmt.Sprintf("/proc/%d/fd/%d", ip.pid, ip.memFD), &now) != nil {
		return false
	}
	return held.Dev == now.Dev && held.Ino == now.Ino
}

// ImportPointer maps the allocation data names (cuMemPoolImportPointer):
// "Returns in ptr_out a pointer to the imported memory." Importing the
// same data again returns the same address, counted once more, as
// IPCOpen does: one FreePointer for each import.
func (ip *importedPool) ImportPointer(data driver.PoolExportData) (devarray.Ptr, int64, error) {
	d := ip.d
	if err := d.checkFault("mem pool import pointer"); err != nil {
		return 0, 0, err
	}
	e, err := parseExportData(data)
	if err != nil {
		return 0, 0, fmt.Errorf("sim: mem pool import pointer: %w", err)
	}
	d.ipc.openMu.Lock()
	defer d.ipc.openMu.Unlock()
	if d.Closed() {
		return 0, 0, fmt.Errorf("sim: mem pool import pointer: %w", driver.ErrClosed)
	}
	if ip.destroyed {
		return 0, 0, fmt.Errorf("sim: mem pool import pointer: %s was destroyed here: %w", ip.name, driver.ErrInvalidValue)
	}
	if e.id != ip.id {
		return 0, 0, fmt.Errorf("sim: mem pool import pointer: export data of another pool than %s: %w", ip.name, driver.ErrInvalidValue)
	}
	key := e.handleForm
	binary.LittleEndian.PutUint64(key[56:], uint64(ip.handle)) // one mapping per imported pool
	if p, size, ok := d.ipc.reopen(key); ok {
		return devarray.Ptr(p), size, nil
	}
	if err := ip.live(e); err != nil {
		return 0, 0, fmt.Errorf("sim: mem pool import pointer: %w", err)
	}
	p, err := d.mapOpened(ip.mem, e.off, e.size, key, ip)
	if err != nil {
		return 0, 0, fmt.Errorf("sim: mem pool import pointer: %w", err)
	}
	return devarray.Ptr(p), e.size, nil
}

// live checks that the exporter still has the allocation e names.
func (ip *importedPool) live(e exportData) error {
	switch {
	case ip.word(hdrDestroyed) != 0:
		return fmt.Errorf("process %d destroyed the pool: %w", ip.pid, driver.ErrStaleIPCHandle)
	case !ip.exporterAlive():
		return fmt.Errorf("process %d, which exported the pool, has exited: %w", ip.pid, driver.ErrStaleIPCHandle)
	case e.off+e.size > ip.memLen:
		return fmt.Errorf("bytes [%d, +%d) of a device memory of %d: %w", e.off, e.size, ip.memLen, driver.ErrInvalidValue)
	}
	sl := unsafe.Slice((*uint64)(unsafe.Pointer(&ip.file[poolHeader+e.slot*ipcSlotBytes])), 4)
	if atomic.LoadUint64(&sl[3]) == 0 || sl[0] != uint64(e.off) || sl[1] != uint64(e.size) || sl[2] != e.serial {
		return fmt.Errorf("process %d freed the allocation: %w", ip.pid, driver.ErrStaleIPCHandle)
	}
	return nil
}

// FreePointer unmaps memory ImportPointer mapped (cuMemFree of an imported
// pointer), at its last import's free.
func (ip *importedPool) FreePointer(p devarray.Ptr) error {
	return ip.d.closeOpened(p, ip, false, "mem pool free imported pointer")
}

// Destroy releases the imported pool and unmaps what it still maps
// (cuMemPoolDestroy of an imported pool).
func (ip *importedPool) Destroy() error {
	d := ip.d
	d.ipc.openMu.Lock()
	if ip.destroyed {
		d.ipc.openMu.Unlock()
		return nil
	}
	ip.destroyed = true
	d.ipc.openMu.Unlock()
	d.ipc.mu.Lock()
	var ptrs []uintptr
	for p, o := range d.ipc.opened {
		if o.pool == ip {
			ptrs = append(ptrs, p)
		}
	}
	d.ipc.mu.Unlock()
	for _, p := range ptrs {
		d.closeOpened(devarray.Ptr(p), ip, true, "destroy imported mem pool") //nolint:errcheck // a faulted device unmaps at Close
	}
	d.ipc.mu.Lock()
	for i, q := range d.ipc.pools {
		if q == ip {
			d.ipc.pools = append(d.ipc.pools[:i], d.ipc.pools[i+1:]...)
			break
		}
	}
	d.ipc.mu.Unlock()
	ip.release()
	return nil
}
