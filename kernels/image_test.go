package kernels

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fatbinEntry is one entry of a fatbin: a cubin (machine code) or PTX.
type fatbinEntry struct {
	kind uint16 // 1 PTX, 2 cubin (ELF)
	arch uint32 // 70 for compute_70 / sm_70, 90 for sm_90
	size uint64
}

// fatbinEntries reads the entries of a fatbin made by nvcc -fatbin: a
// 16-byte header (magic 0xBA55ED50, version, header size, payload size),
// then entries, each a header (kind, version, header size, payload size,
// ..., the architecture at byte 28) and its payload.
func fatbinEntries(t *testing.T, b []byte) []fatbinEntry {
	t.Helper()
	require.GreaterOrEqual(t, len(b), 16, "a fatbin has a 16-byte header")
	require.Equal(t, uint32(0xBA55ED50), binary.LittleEndian.Uint32(b), "fatbin magic")
	hsize := int(binary.LittleEndian.Uint16(b[6:]))
	end := uint64(hsize) + binary.LittleEndian.Uint64(b[8:])
	require.Equal(t, uint64(len(b)), end, "the header's size covers the file")
	var out []fatbinEntry
	for off := uint64(hsize); off < end; {
		require.LessOrEqual(t, off+32, end, "entry header at %d", off)
		e := b[off:]
		eh := uint64(binary.LittleEndian.Uint32(e[4:]))
		ent := fatbinEntry{kind: binary.LittleEndian.Uint16(e), arch: binary.LittleEndian.Uint32(e[28:]), size: binary.LittleEndian.Uint64(e[8:])}
		out = append(out, ent)
		off += eh + ent.size
		require.LessOrEqual(t, off, end, "entry payload")
	}
	return out
}

// The embedded module is a fatbin with machine code for sm_90 (the H100
// and H200 load it without JIT) and compute_70 PTX (the driver compiles it
// for any other GPU from Volta on).
func TestModuleImageHasSM90AndPTX(t *testing.T) {
	entries := fatbinEntries(t, []byte(moduleImage))
	var cubin90, ptx70 bool
	for _, e := range entries {
		t.Logf("entry: kind %d arch %d, %d bytes", e.kind, e.arch, e.size)
		cubin90 = cubin90 || e.kind == 2 && e.arch == 90
		ptx70 = ptx70 || e.kind == 1 && e.arch == 70
	}
	assert.True(t, cubin90, "sm_90 machine code")
	assert.True(t, ptx70, "compute_70 PTX")
}
