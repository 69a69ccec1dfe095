package sim

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
)

// The device memory works with either backing (memfd on Linux, anonymous
// shared memory elsewhere and with -tags sim_nomemfd): it reads back what
// was written, and a large freed range can be allocated again. IPC export
// works with memfd and is errors.ErrUnsupported without it.
func TestSharedMemoryBacking(t *testing.T) {
	d, err := New(Config{Memory: 64 << 20})
	require.NoError(t, err)
	defer d.Close()
	p, err := d.Malloc(8 << 20)
	require.NoError(t, err)
	want := make([]byte, 8<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	require.NoError(t, d.CopyHtoD(p, want))
	got := make([]byte, len(want))
	require.NoError(t, d.CopyDtoH(got, p))
	assert.Equal(t, want, got, "device memory reads back what was written")

	_, _, _, ipcErr := d.IPCExport(p)
	if ipcSupported() == nil {
		assert.NoError(t, ipcErr, "IPC export with memfd")
	} else {
		assert.ErrorIs(t, ipcErr, errors.ErrUnsupported, "IPC export without memfd says it is unsupported")
		_, _, err := d.IPCOpen(driver.IPCHandle{})
		assert.ErrorIs(t, err, errors.ErrUnsupported, "IPC open without memfd says it is unsupported")
	}
	require.NoError(t, d.Free(p)) // 8 MiB: its pages are given back where the backing can
	q, err := d.Malloc(60 << 20)
	require.NoError(t, err, "the freed range is allocated again")
	require.NoError(t, d.Free(q))
}
