package transfer_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// The copier keeps its registrations after a copy. A later copy of memory
// that only partly overlaps one must not hand the driver a range partly
// page-locked (CUDA_ERROR_INVALID_VALUE on a GPU, ErrInvalidValue on sim):
// the direct path releases the registration first, or, when another copy
// still uses it, the planner's copy takes the staged ring and one that
// asked for the direct path fails with pinned.ErrBusy.
func TestCopiesOfPartlyRegisteredMemory(t *testing.T) {
	dev := testdev.Open(t)
	page := os.Getpagesize()
	c, err := transfer.New(dev, transfer.WithRegisterCache(1<<30))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	a, err := devarray.Empty(dev, devarray.Uint8, 2*page)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	for _, over := range []struct {
		name       string
		registered func(mem []byte) []byte // what an earlier copy registered
		copied     func(mem []byte) []byte // what the next copy moves
	}{
		{"starting inside a registration", func(m []byte) []byte { return m[page : 3*page] }, func(m []byte) []byte { return m[2*page : 4*page] }},
		{"ending inside a registration", func(m []byte) []byte { return m[3*page : 5*page] }, func(m []byte) []byte { return m[2*page : 4*page] }},
		{"around a registration", func(m []byte) []byte { return m[3*page+100 : 3*page+900] }, func(m []byte) []byte { return m[2*page : 4*page] }},
	} {
		for _, path := range []transfer.Path{transfer.PathAuto, transfer.PathDirect, transfer.PathStaged, transfer.PathRegistered} {
			for _, toDevice := range []bool{true, false} {
				mem := testdev.RandomBytes(8 * page)
				reg := over.registered(mem)
				scratch, err := devarray.Empty(dev, devarray.Uint8, len(reg))
				require.NoError(t, err)
				require.NoError(t, c.Copy(transfer.Dev(scratch), transfer.HostBytes(reg, devarray.Uint8), transfer.Via(transfer.PathRegistered)))
				require.NoError(t, scratch.Free())
				b := over.copied(mem)
				want := append([]byte(nil), b...)
				if toDevice {
					require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(b, devarray.Uint8), transfer.Via(path)), "%s, %v path, to the device", over.name, path)
				} else {
					require.NoError(t, a.CopyFrom(want))
					clear(b)
					require.NoError(t, c.Copy(transfer.HostBytes(b, devarray.Uint8), transfer.Dev(a), transfer.Via(path)), "%s, %v path, to the host", over.name, path)
					assert.Equal(t, want, b, "%s, %v path: the bytes came down", over.name, path)
				}
				got, err := devarray.ToHost[uint8](a)
				require.NoError(t, err)
				assert.Equal(t, want, got, "%s, %v path", over.name, path)
				require.NoError(t, c.Unregister(reg))
			}
		}
	}

	// A registration another copy is using cannot be released.
	mem := testdev.RandomBytes(8 * page)
	s, err := dev.NewStream()
	require.NoError(t, err)
	defer s.Close()
	held, err := devarray.Empty(dev, devarray.Uint8, 2*page)
	require.NoError(t, err)
	defer func() { require.NoError(t, held.Free()) }()
	resume := testdev.Hold(t, s)
	op, err := c.CopyAsync(s, transfer.Dev(held), transfer.HostBytes(mem[page:3*page], devarray.Uint8), transfer.Via(transfer.PathRegistered))
	require.NoError(t, err)
	b := mem[2*page : 4*page]
	err = c.Copy(transfer.Dev(a), transfer.HostBytes(b, devarray.Uint8), transfer.Via(transfer.PathDirect))
	assert.ErrorIs(t, err, pinned.ErrBusy, "the direct path asked for, with the memory partly page-locked by a copy running")
	before := dev.Ledger().Snapshot()
	require.NoError(t, c.Copy(transfer.Dev(a), transfer.HostBytes(b, devarray.Uint8)), "the planner's copy")
	diff := accounting.Diff(before, dev.Ledger().Snapshot())
	assert.Equal(t, int64(len(b)), diff.Copies[accounting.HtoD][accounting.PathStaged].Bytes, "through the staged ring")
	resume() // before reading: a copy into pageable memory waits while a host function holds a stream
	require.NoError(t, op.Wait())
	got, err := devarray.ToHost[uint8](a)
	require.NoError(t, err)
	assert.Equal(t, b, got)
	require.NoError(t, c.Unregister(mem[page:3*page]))
}
