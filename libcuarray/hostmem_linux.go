//go:build linux && cgo

package main

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
)

// hostAllocation returns the run of contiguous mappings of this process,
// as /proc/self/maps lists them, that holds address p and is readable
// (and writable, when write): the most the library can know of the host
// memory another library allocated. A descriptor of memory nothing is
// mapped at, or reaching past its mapping into a guard page or a
// read-only one, is then refused instead of crashing the process on the
// first copy.
//
// Reading /proc/self/maps costs tens to hundreds of microseconds, so the
// mappings are read once and again only when an import does not fit the
// ones read before (fresh: read them now); a run found in them is used
// once msync says it is still mapped (one system call, whatever its size).
// cached says the answer came from mappings read before. Memory unmapped
// or made inaccessible after the import is the caller's error.
func hostAllocation(p uintptr, write, fresh bool) (base uintptr, size int64, known, ok, cached bool) {
	hostMaps.Lock()
	defer hostMaps.Unlock()
	if !fresh && hostMaps.list != nil {
		if lo, hi, ok := hostMaps.run(p, write); ok && mapped(lo, hi) {
			return lo, int64(hi - lo), true, true, true
		}
	}
	if err := hostMaps.read(); err != nil {
		return 0, 0, false, false, false // no procfs: nothing to check against
	}
	lo, hi, ok := hostMaps.run(p, write)
	return lo, int64(hi - lo), true, ok, false
}

// hostMaps is the process's mappings as last read.
var hostMaps mappings

type mappings struct {
	sync.Mutex
	list []mapping // by address
}

// mapping is one line of /proc/self/maps: a range and its permissions.
type mapping struct {
	lo, hi      uintptr
	read, write bool
}

// read reads /proc/self/maps again.
func (m *mappings) read() error {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return err
	}
	m.list = m.list[:0]
	for line := range bytes.Lines(b) {
		if mp, ok := parseMapping(line); ok {
			m.list = append(m.list, mp)
		}
	}
	return nil
}

// run returns the range of the contiguous mappings around p that allow
// the use.
func (m *mappings) run(p uintptr, write bool) (lo, hi uintptr, ok bool) {
	usable := func(i int) bool { return m.list[i].read && (!write || m.list[i].write) }
	i, _ := slices.BinarySearchFunc(m.list, p, func(mp mapping, p uintptr) int {
		switch {
		case mp.hi <= p:
			return -1
		case mp.lo > p:
			return 1
		}
		return 0
	})
	if i >= len(m.list) || m.list[i].lo > p || !usable(i) {
		return 0, 0, false
	}
	first, last := i, i
	for first > 0 && m.list[first-1].hi == m.list[first].lo && usable(first-1) {
		first--
	}
	for last+1 < len(m.list) && m.list[last+1].lo == m.list[last].hi && usable(last+1) {
		last++
	}
	return m.list[first].lo, m.list[last].hi, true
}

// parseMapping parses one line of /proc/self/maps ("start-end perms
// offset dev inode path").
func parseMapping(line []byte) (mapping, bool) {
	r, rest, ok1 := bytes.Cut(line, []byte(" "))
	a, b, ok2 := bytes.Cut(r, []byte("-"))
	if !ok1 || !ok2 || len(rest) < 4 {
		return mapping{}, false
	}
	lo, err1 := strconv.ParseUint(string(a), 16, 64)
	hi, err2 := strconv.ParseUint(string(b), 16, 64)
	if err1 != nil || err2 != nil || hi <= lo {
		return mapping{}, false
	}
	return mapping{lo: uintptr(lo), hi: uintptr(hi), read: rest[0] == 'r', write: rest[1] == 'w'}, true
}

// mapped reports whether every page of [lo, hi) is still mapped: msync
// with MS_ASYNC does nothing else on Linux (since 2.6.19) and fails with
// ENOMEM on a range that holds unmapped memory.
func mapped(lo, hi uintptr) bool {
	const msAsync = 1 // MS_ASYNC
	_, _, errno := syscall.Syscall(syscall.SYS_MSYNC, lo, hi-lo, msAsync)
	return errno == 0
}
