// Package fatbin reads the fatbins nvcc makes (nvcc -fatbin): the entries,
// each machine code (a cubin) or PTX for one architecture, and the PTX
// text of an entry, decompressed where nvcc compressed it. The emulated
// CUDA driver and sim read a module's PTX from it, as the driver's JIT
// does on a GPU for which the fatbin holds no machine code.
//
// The layout is nvcc's, as cuobjdump and the driver read it (no document
// describes it; it is read here from nvcc 11.8's output): a 16-byte
// header (magic 0xBA55ED50, version, header size, size of the entries),
// then entries, each a header (kind, version, header size, padded size,
// compressed size, the architecture, flags, the uncompressed size; the
// two sizes of compression are 0 in an entry stored as it is) and its
// bytes. A compressed entry (flag 0x2000) holds an LZ4 block.
package fatbin

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Magic starts a fatbin.
const Magic = 0xBA55ED50

// Kinds of entry.
const (
	KindPTX   = 1
	KindCubin = 2
)

// flagCompressed marks an entry whose bytes are an LZ4 block.
const flagCompressed = 0x2000

// maxUncompressed bounds what one entry may decompress to (256 MiB): an
// entry claiming more is refused rather than allocated.
const maxUncompressed = 256 << 20

// ErrFormat is wrapped by every error about a malformed fatbin.
var ErrFormat = errors.New("malformed fatbin")

// ErrNoPTX is PTX's error for a well-formed fatbin without a PTX entry.
var ErrNoPTX = errors.New("no PTX entry in the fatbin")

// Entry is one entry of a fatbin.
type Entry struct {
	Kind       int    // KindPTX or KindCubin
	Arch       int    // the architecture, 70 for compute_70 or sm_70
	Compressed bool   // the bytes are an LZ4 block
	data       []byte // the entry's bytes as stored
	size       int    // the uncompressed size
}

// Is reports whether b starts with a fatbin's magic number.
func Is(b []byte) bool {
	return len(b) >= 16 && binary.LittleEndian.Uint32(b) == Magic
}

// Size returns the size of the fatbin at the start of b, from its header,
// or 0 when b is not one.
func Size(b []byte) int {
	if !Is(b) {
		return 0
	}
	return int(binary.LittleEndian.Uint16(b[6:])) + int(binary.LittleEndian.Uint64(b[8:]))
}

// Entries returns the entries of the fatbin at the start of b.
func Entries(b []byte) ([]Entry, error) {
	if !Is(b) {
		return nil, fmt.Errorf("%w: no fatbin magic", ErrFormat)
	}
	head := uint64(binary.LittleEndian.Uint16(b[6:]))
	end := head + binary.LittleEndian.Uint64(b[8:])
	if head < 16 || end < head || end > uint64(len(b)) {
		return nil, fmt.Errorf("%w: %d bytes, the header says %d", ErrFormat, len(b), end)
	}
	var out []Entry
	for off := head; off < end; {
		if end-off < 64 {
			return nil, fmt.Errorf("%w: entry at %d: a header of %d bytes", ErrFormat, off, end-off)
		}
		e := b[off:end]
		eh := uint64(binary.LittleEndian.Uint32(e[4:]))
		padded := binary.LittleEndian.Uint64(e[8:])
		stored := uint64(binary.LittleEndian.Uint32(e[16:]))
		if eh < 64 || eh > uint64(len(e)) || padded > uint64(len(e))-eh || stored > padded {
			return nil, fmt.Errorf("%w: entry at %d: header %d, size %d, stored %d, in %d bytes", ErrFormat, off, eh, padded, stored, len(e))
		}
		flags := binary.LittleEndian.Uint64(e[40:])
		en := Entry{
			Kind:       int(binary.LittleEndian.Uint16(e)),
			Arch:       int(binary.LittleEndian.Uint32(e[28:])),
			Compressed: flags&flagCompressed != 0,
			data:       e[eh : eh+padded],
			size:       int(padded),
		}
		if en.Compressed { // the block's own size is its stored size
			en.data = e[eh : eh+stored]
			u := binary.LittleEndian.Uint64(e[56:])
			if u > maxUncompressed {
				return nil, fmt.Errorf("%w: entry at %d decompresses to %d bytes", ErrFormat, off, u)
			}
			en.size = int(u)
		}
		out = append(out, en)
		off += eh + padded
	}
	return out, nil
}

// Bytes returns the entry's bytes, decompressed.
func (e Entry) Bytes() ([]byte, error) {
	if !e.Compressed {
		return e.data, nil
	}
	b, err := decodeLZ4(e.data, e.size)
	if err != nil {
		return nil, fmt.Errorf("fatbin: entry for %d: %w", e.Arch, err)
	}
	return b, nil
}

// PTX returns the PTX text of the fatbin's PTX entry of the highest
// architecture, decompressed, and that architecture.
func PTX(b []byte) (text string, arch int, err error) {
	es, err := Entries(b)
	if err != nil {
		return "", 0, err
	}
	best := -1
	for i, e := range es {
		if e.Kind == KindPTX && (best < 0 || e.Arch > es[best].Arch) {
			best = i
		}
	}
	if best < 0 {
		return "", 0, ErrNoPTX
	}
	raw, err := es[best].Bytes()
	if err != nil {
		return "", 0, err
	}
	for len(raw) > 0 && raw[len(raw)-1] == 0 {
		raw = raw[:len(raw)-1]
	}
	return string(raw), es[best].Arch, nil
}
