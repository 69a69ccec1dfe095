//go:build cuda && cudaemu && linux

package cuda

import (
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// On the emulated driver with check=streams, the cuda backend's stream use
// is judged by sim's stream race checker: two streams that touch the same
// bytes without an event race (the call fails, and the report names both
// operations), and with the event they do not.
func TestStreamRaceCheckerOnTheEmulatedDriver(t *testing.T) {
	if !inChild(t, "check=streams&latency=2ms") {
		return
	}
	d := open(t)
	const n = 4096
	a, err := d.Malloc(n)
	require.NoError(t, err)
	b, err := d.Malloc(n)
	require.NoError(t, err)
	src := make([]byte, n)
	rand.Read(src)
	require.NoError(t, d.CopyHtoD(a, src))
	s1, err := d.NewStream()
	require.NoError(t, err)
	defer s1.Close()
	s2, err := d.NewStream()
	require.NoError(t, err)
	defer s2.Close()

	// Ordered: an event between the write and the read.
	ev, err := d.NewEvent()
	require.NoError(t, err)
	defer ev.Close()
	require.NoError(t, s1.MemsetAsync(a, 1, n))
	require.NoError(t, s1.Record(ev))
	require.NoError(t, s2.WaitEvent(ev))
	require.NoError(t, s2.CopyDtoDAsync(b, a, n))
	require.NoError(t, d.Synchronize())
	assert.Empty(t, emulated.Races(), "no race with the event")

	// A race: the same without the event.
	require.NoError(t, s1.MemsetAsync(a, 2, n))
	err = s2.CopyDtoDAsync(b, a, n)
	require.Error(t, err, "the racing copy fails")
	races := emulated.Races()
	require.Len(t, races, 1, "one race reported")
	assert.Contains(t, races[0], driver.ErrStreamRace.Error())
	assert.Contains(t, races[0], "async copy DtoD")
	assert.Contains(t, races[0], "async memset")
	assert.True(t, strings.Contains(races[0], "streamcheck_emulated_test.go"), "where each was queued:\n%s", races[0])
	require.NoError(t, d.Synchronize())
	require.NoError(t, d.Free(a))
	require.NoError(t, d.Free(b))
}

// On the emulated driver with check=streams, stream-ordered memory is held
// to its life (cuMemFreeAsync: "The allocation must not be accessed after
// stream execution reaches the free."): work queued after cuMemFreeAsync
// fails, and the report names the use and the free; queued before it, on
// another stream ordered by events, it does not.
func TestStreamOrderedLifetimeOnTheEmulatedDriver(t *testing.T) {
	if !inChild(t, "check=streams&latency=2ms") {
		return
	}
	d := open(t)
	const n = 4096
	s1, err := d.NewStream()
	require.NoError(t, err)
	defer s1.Close()
	s2, err := d.NewStream()
	require.NoError(t, err)
	defer s2.Close()
	allocated, written := newEvent(t, d), newEvent(t, d)

	// Ordered: s2 uses the memory after its allocation, and the free after that use.
	p, err := s1.MallocAsync(n)
	require.NoError(t, err)
	require.NoError(t, s1.Record(allocated))
	require.NoError(t, s2.WaitEvent(allocated))
	require.NoError(t, s2.MemsetAsync(p, 1, n))
	require.NoError(t, s2.Record(written))
	require.NoError(t, s1.WaitEvent(written))
	require.NoError(t, s1.FreeAsync(p))
	require.NoError(t, d.Synchronize())
	assert.Empty(t, emulated.Races(), "no race within the allocation's life")

	// A use after free: a memset queued on the freeing stream after the free.
	p, err = s1.MallocAsync(n)
	require.NoError(t, err)
	require.NoError(t, s1.FreeAsync(p))
	err = s1.MemsetAsync(p, 2, n)
	require.Error(t, err, "the memset after the free fails")
	races := emulated.Races()
	require.Len(t, races, 1, "one race reported")
	assert.Contains(t, races[0], "use after free")
	assert.Contains(t, races[0], "async memset")
	assert.Contains(t, races[0], "free async")
	assert.True(t, strings.Contains(races[0], "streamcheck_emulated_test.go"), "where each was queued:\n%s", races[0])
	require.NoError(t, d.Synchronize())
}

// newEvent returns an event of d, closed by the test's cleanup.
func newEvent(t *testing.T, d driver.Device) driver.Event {
	t.Helper()
	ev, err := d.NewEvent()
	require.NoError(t, err)
	t.Cleanup(func() { ev.Close() })
	return ev
}
