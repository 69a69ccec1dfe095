package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// How sim emulates CUDA IPC: device memory is a memory file (memfd) shared
// with its mapping, and a second small memory file, the registry, lists
// the exported allocations that are still live. A handle names the
// process, both files' descriptors, the registry slot and the allocation
// (offset, size, serial). Another process opens the files through
// /proc/PID/fd, checks the registry slot (a freed allocation's handle is
// stale) and maps the allocation: the same bytes, no copy, as on a GPU.

const (
	ipcMagic     = "cuasimv1"
	ipcSlots     = 4096
	ipcSlotBytes = 32 // off, size, serial, live: four uint64
	memfdPrefix  = "/memfd:cuarray-sim"
)

// handle is the content of a sim IPC handle.
type handle struct {
	Magic             [8]byte
	PID, MemFD, RegFD int32
	Slot              int32
	Off, Size         int64
	Serial            uint64
	_                 [64 - 8 - 16 - 24]byte
}

// ipcState is a device's exported allocations and the ones it opened.
type ipcState struct {
	mu       sync.Mutex
	regfd    int
	registry []byte        // ipcSlots slots; nil until the first export
	slots    map[int64]int // allocation offset → slot, for the exported ones
	serial   uint64        // of the last export
	opened   map[uintptr]*opened
	byHandle map[driver.IPCHandle]uintptr // the opened allocations by handle

	// openMu orders IPCOpen and IPCClose, so that two opens of one handle
	// map it once.
	openMu sync.Mutex

	pools         []*importedPool // the pools ImportMemPool imported, not destroyed
	importedPools int             // pools imported, for their handles
}

// opened is another process's allocation mapped here.
type opened struct {
	mapping []byte // page-aligned mapping
	mem     []byte // the allocation inside it
	handle  driver.IPCHandle
	refs    int           // IPCOpen calls not yet matched by an IPCClose
	pool    *importedPool // the imported pool it came from; nil for IPCOpen
}

func newIPCState() *ipcState {
	return &ipcState{regfd: -1, slots: map[int64]int{}, opened: map[uintptr]*opened{}, byHandle: map[driver.IPCHandle]uintptr{}}
}

func (s *ipcState) slot(i int) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(&s.registry[i*ipcSlotBytes])), 4)
}

// IPCExport returns the handle of the live allocation that holds p.
func (d *Device) IPCExport(p devarray.Ptr) (driver.IPCHandle, devarray.Ptr, int64, error) {
	if err := ipcSupported(); err != nil {
		return driver.IPCHandle{}, 0, 0, fmt.Errorf("sim: IPC export %v: %w", p, err)
	}
	if err := d.checkFault("IPC export"); err != nil {
		return driver.IPCHandle{}, 0, 0, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return driver.IPCHandle{}, 0, 0, fmt.Errorf("sim: IPC export: %w", driver.ErrClosed)
	}
	addr := uintptr(p)
	var sp span
	ok := addr >= d.base && addr < d.base+uintptr(d.arena.size)
	if ok {
		sp, ok = d.arena.find(int64(addr-d.base), 1)
	}
	if !ok {
		return driver.IPCHandle{}, 0, 0, fmt.Errorf("sim: IPC export %v: not inside a live device allocation: %w", p, driver.ErrInvalidPointer)
	}
	slot, serial, err := d.ipc.export(sp)
	if err != nil {
		return driver.IPCHandle{}, 0, 0, fmt.Errorf("sim: IPC export %v: %w", p, err)
	}
	h := handle{PID: int32(os.Getpid()), MemFD: int32(d.memfd), RegFD: int32(d.ipc.regfd), Slot: int32(slot), Off: sp.off, Size: sp.size, Serial: serial}
	copy(h.Magic[:], ipcMagic)
	var out driver.IPCHandle
	buf := bytes.NewBuffer(out[:0])
	if err := binary.Write(buf, binary.LittleEndian, h); err != nil {
		return driver.IPCHandle{}, 0, 0, fmt.Errorf("sim: IPC export: %w", err)
	}
	copy(out[:], buf.Bytes())
	return out, devarray.Ptr(d.base + uintptr(sp.off)), sp.size, nil
}

// export lists an allocation in the registry (once) and returns its slot and serial.
func (s *ipcState) export(sp span) (int, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.registry == nil {
		reg, fd, err := sharedMemory("cuarray-sim-ipc", ipcSlots*ipcSlotBytes)
		if err != nil {
			return 0, 0, err
		}
		s.registry, s.regfd = reg, fd
	}
	if i, ok := s.slots[sp.off]; ok {
		return i, s.slot(i)[2], nil
	}
	for i := range ipcSlots {
		sl := s.slot(i)
		if atomic.LoadUint64(&sl[3]) == 0 {
			s.serial++
			sl[0], sl[1], sl[2] = uint64(sp.off), uint64(sp.size), s.serial
			atomic.StoreUint64(&sl[3], 1)
			s.slots[sp.off] = i
			return i, s.serial, nil
		}
	}
	return 0, 0, fmt.Errorf("all %d IPC registry slots are in use: %w", ipcSlots, driver.ErrOutOfMemory)
}

// forget marks an exported allocation freed: its handle is stale.
func (s *ipcState) forget(off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.slots[off]; ok {
		atomic.StoreUint64(&s.slot(i)[3], 0)
		delete(s.slots, off)
	}
}

// IPCOpen maps an allocation of another process's sim device. A handle
// already open here is not mapped again: IPCOpen returns the same address
// and counts the open, and the mapping stays until as many IPCClose calls
// (CUDA refuses a second cuIpcOpenMemHandle of one handle in a context;
// the cuda backend counts the same way). The handle of this process is
// refused with driver.ErrOwnIPCHandle; the handle of an allocation its
// exporter freed with driver.ErrStaleIPCHandle, unless Config.OpenStaleIPC
// says to map it as the H100 did.
func (d *Device) IPCOpen(raw driver.IPCHandle) (devarray.Ptr, int64, error) {
	if err := ipcSupported(); err != nil {
		return 0, 0, fmt.Errorf("sim: IPC open: %w", err)
	}
	if err := d.checkFault("IPC open"); err != nil {
		return 0, 0, err
	}
	var h handle
	if err := binary.Read(bytes.NewReader(raw[:]), binary.LittleEndian, &h); err != nil || string(h.Magic[:]) != ipcMagic {
		return 0, 0, fmt.Errorf("sim: IPC open: not a sim IPC handle: %w", driver.ErrInvalidValue)
	}
	if int(h.PID) == os.Getpid() {
		return 0, 0, fmt.Errorf("sim: IPC open: %w", driver.ErrOwnIPCHandle)
	}
	if h.Off < 0 || h.Size <= 0 || h.Slot < 0 || h.Slot >= ipcSlots {
		return 0, 0, fmt.Errorf("sim: IPC open: offset %d, size %d, slot %d out of range: %w", h.Off, h.Size, h.Slot, driver.ErrInvalidValue)
	}
	d.ipc.openMu.Lock()
	defer d.ipc.openMu.Unlock()
	if p, size, ok := d.ipc.reopen(raw); ok {
		return devarray.Ptr(p), size, nil
	}
	if err := checkRegistry(h); err != nil {
		if !(d.cfg.OpenStaleIPC && errors.Is(err, driver.ErrStaleIPCHandle)) {
			return 0, 0, fmt.Errorf("sim: IPC open: %w", err)
		}
		d.staleIPCOpens.Add(1)
	}
	mem, err := openFile(h.PID, h.MemFD, syscall.O_RDWR, h.Off+h.Size)
	if err != nil {
		return 0, 0, fmt.Errorf("sim: IPC open: %w", err)
	}
	defer syscall.Close(mem)
	p, err := d.mapOpened(mem, h.Off, h.Size, raw, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("sim: IPC open: %w", err)
	}
	return devarray.Ptr(p), h.Size, nil
}

// mapOpened maps size bytes at off of another process's device memory
// file mem, counts them in the ledger as kind ipc, and lists them as
// opened by key (a legacy handle, or export data of the imported pool
// pool). d.ipc.openMu is held.
func (d *Device) mapOpened(mem int, off, size int64, key driver.IPCHandle, pool *importedPool) (uintptr, error) {
	page := int64(os.Getpagesize())
	start := off / page * page
	mapping, err := syscall.Mmap(mem, start, int(off+size-start), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("map the allocation: %w", err)
	}
	o := &opened{mapping: mapping, mem: mapping[off-start : off-start+size : off-start+size], handle: key, refs: 1, pool: pool}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(o.mem)))
	if err := d.ledger.Alloc(accounting.IPC, p, size); err != nil {
		syscall.Munmap(mapping)
		return 0, err
	}
	d.mu.RLock()
	closed := d.closed
	if !closed {
		d.ipc.mu.Lock()
		d.ipc.opened[p] = o
		d.ipc.byHandle[key] = p
		d.ipc.mu.Unlock()
	}
	d.mu.RUnlock()
	if closed {
		syscall.Munmap(mapping)
		d.ledger.Free(accounting.IPC, p, size)
		return 0, driver.ErrClosed
	}
	return p, nil
}

// StaleIPCOpens returns how many stale handles IPCOpen has opened, with
// Config.OpenStaleIPC: each maps memory its exporter freed.
func (d *Device) StaleIPCOpens() int64 { return d.staleIPCOpens.Load() }

// reopen counts one more open of a handle already mapped here, and returns
// its address and size.
func (s *ipcState) reopen(raw driver.IPCHandle) (uintptr, int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.byHandle[raw]
	if !ok {
		return 0, 0, false
	}
	o := s.opened[p]
	o.refs++
	return p, int64(len(o.mem)), true
}

// openFile opens another process's memory file through /proc, checking
// that it is a cuarray sim memory file of at least size bytes.
func openFile(pid, fd int32, mode int, size int64) (int, error) {
	path := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	target, err := os.Readlink(path)
	if err != nil {
		return -1, fmt.Errorf("process %d's file %d: %v: %w", pid, fd, err, driver.ErrStaleIPCHandle)
	}
	if !strings.HasPrefix(target, memfdPrefix) {
		return -1, fmt.Errorf("foreign handle: process %d's file %d is %q, not a sim device's: %w", pid, fd, target, driver.ErrInvalidValue)
	}
	f, err := syscall.Open(path, mode|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %v: %w", path, err, driver.ErrInvalidValue)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f, &st); err != nil || st.Size < size {
		syscall.Close(f)
		return -1, fmt.Errorf("foreign handle: %s holds %d bytes, the handle names %d: %w", path, st.Size, size, driver.ErrInvalidValue)
	}
	return f, nil
}

// checkRegistry checks that the handle's allocation is still exported.
func checkRegistry(h handle) error {
	fd, err := openFile(h.PID, h.RegFD, syscall.O_RDONLY, ipcSlots*ipcSlotBytes)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	reg, err := syscall.Mmap(fd, 0, ipcSlots*ipcSlotBytes, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map the IPC registry: %w", err)
	}
	defer syscall.Munmap(reg)
	sl := unsafe.Slice((*uint64)(unsafe.Pointer(&reg[int(h.Slot)*ipcSlotBytes])), 4)
	if atomic.LoadUint64(&sl[3]) == 0 || sl[0] != uint64(h.Off) || sl[1] != uint64(h.Size) || sl[2] != h.Serial {
		return fmt.Errorf("process %d freed the allocation: %w", h.PID, driver.ErrStaleIPCHandle)
	}
	return nil
}

// containing returns the bytes [addr, addr+n) of an opened allocation.
func (s *ipcState) containing(addr uintptr, n int64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, o := range s.opened {
		if addr >= p && n >= 0 && int64(addr-p)+n <= int64(len(o.mem)) {
			off := int64(addr - p)
			return o.mem[off : off+n : off+n], true
		}
	}
	return nil, false
}

// IPCClose undoes one IPCOpen of the allocation at p, and unmaps it at
// the last.
func (d *Device) IPCClose(p devarray.Ptr) error {
	return d.closeOpened(p, nil, false, "IPC close")
}

// closeOpened undoes one opening of the allocation at p, which IPCOpen
// (pool nil) or pool's ImportPointer mapped, and unmaps it at the last;
// all unmaps it at once.
func (d *Device) closeOpened(p devarray.Ptr, pool *importedPool, all bool, op string) error {
	if err := d.checkFault(op); err != nil {
		return err // the mapping stays until Close
	}
	d.ipc.openMu.Lock()
	defer d.ipc.openMu.Unlock()
	d.ipc.mu.Lock()
	o, ok := d.ipc.opened[uintptr(p)]
	ok = ok && o.pool == pool
	last := ok && (o.refs == 1 || all)
	switch {
	case last:
		delete(d.ipc.opened, uintptr(p))
		delete(d.ipc.byHandle, o.handle)
	case ok:
		o.refs--
	}
	d.ipc.mu.Unlock()
	if !ok {
		if pool != nil {
			return fmt.Errorf("sim: %s %v: not imported from %s: %w", op, p, pool.name, driver.ErrInvalidPointer)
		}
		return fmt.Errorf("sim: %s %v: not opened by IPCOpen: %w", op, p, driver.ErrInvalidPointer)
	}
	if !last {
		return nil
	}
	d.mu.Lock() // no copy is using the mapping
	err := syscall.Munmap(o.mapping)
	d.mu.Unlock()
	d.ledger.Free(accounting.IPC, uintptr(p), int64(len(o.mem)))
	if err != nil {
		return fmt.Errorf("sim: %s %v: %w", op, p, err)
	}
	return nil
}

// close unmaps what is still opened and releases the registry (the device
// is closing; d.mu is held).
func (s *ipcState) close(d *Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, o := range s.opened {
		syscall.Munmap(o.mapping)
		d.ledger.Free(accounting.IPC, p, int64(len(o.mem)))
	}
	s.opened = map[uintptr]*opened{}
	s.byHandle = map[driver.IPCHandle]uintptr{}
	if s.registry != nil {
		syscall.Munmap(s.registry)
		syscall.Close(s.regfd)
		s.registry = nil
	}
}
