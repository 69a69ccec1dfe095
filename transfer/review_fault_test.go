package transfer_test

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/transfer"
)

// TestCloseTwiceWaitsForCopies: Close waits for the copies that began
// before it, whichever goroutine calls it. A second Close, called while
// the first waits for a synchronous copy, must not return before that
// copy is done: its caller would free the copy's memory or close the
// device under it.
func TestCloseTwiceWaitsForCopies(t *testing.T) {
	untilTheCopyBegins(t, "Close", closeTwice)
}

// untilTheCopyBegins runs a scenario that needs a copy to have begun when
// its next call (what) comes, up to 5 times: on a loaded machine the copy
// may begin too late, which the scenario reports by returning false.
func untilTheCopyBegins(t *testing.T, what string, scenario func(*testing.T) bool) {
	for attempt := range 5 {
		if scenario(t) {
			return
		}
		t.Logf("attempt %d: the copy had not begun when %s came (a loaded machine); again", attempt, what)
	}
	t.Fatalf("the copy never began before %s", what)
}

// startPausedCopy starts a synchronous direct copy of random floats into a
// new device array of dev on another goroutine, held behind a pause of the
// legacy default stream (as behind a long kernel) until resume, and gives
// it 100 ms to begin. copied receives the copy's error.
func startPausedCopy(t *testing.T, dev *sim.Device, c *transfer.Copier) (d *devarray.DevArray, want []float32, copied chan error, resume func()) {
	want = randomFloats(4096)
	d, err := devarray.Empty(dev, devarray.Float32, len(want))
	require.NoError(t, err)
	legacy, err := dev.ExternalStream(driver.LegacyDefaultStream)
	require.NoError(t, err)
	resume, err = sim.Pause(legacy)
	require.NoError(t, err)
	copied = make(chan error, 1)
	go func() { copied <- c.Copy(transfer.Dev(d), transfer.Host(want), transfer.Via(transfer.PathDirect)) }()
	time.Sleep(100 * time.Millisecond) // the copy has begun
	return d, want, copied, resume
}

// closeTwice runs the scenario once; false when the copy began too late.
func closeTwice(t *testing.T) bool {
	dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: time.Millisecond})
	require.NoError(t, err)
	defer dev.Close()
	c, err := transfer.New(dev)
	require.NoError(t, err)
	d, want, copied, resume := startPausedCopy(t, dev, c)
	defer resume()
	first := make(chan error, 1)
	go func() { first <- c.Close() }()
	time.Sleep(50 * time.Millisecond) // the first Close waits for the copy
	second := make(chan error, 1)
	go func() { second <- c.Close() }()

	var secondErr error
	secondDone := false
	select {
	case secondErr = <-second:
		secondDone = true
	case <-time.After(200 * time.Millisecond): // it waits, as it should
	}
	resume()
	cerr := <-copied
	if errors.Is(cerr, transfer.ErrClosed) {
		<-first
		<-second
		require.NoError(t, d.Free())
		return false
	}
	require.NoError(t, cerr, "the copy began before Close: it completes")
	assert.False(t, secondDone, "the second Close returned (%v) while a copy that began before it was still running", secondErr)
	assert.NoError(t, <-first)
	if !secondDone {
		select {
		case secondErr = <-second:
		case <-time.After(10 * time.Second):
			t.Fatal("the second Close never returned")
		}
	}
	assert.NoError(t, secondErr)
	got, err := dev.Peek(d.Ptr(), d.NBytes())
	require.NoError(t, err)
	assert.Equal(t, unsafe.Slice((*byte)(unsafe.Pointer(&want[0])), len(want)*4), got)
	require.NoError(t, d.Free())
	assert.Zero(t, dev.Ledger().Current(accounting.Device))
	return true
}

// A Free of a device array while a synchronous copy into it runs marks it
// freed at once, and gives its memory back only when the copy returns:
// the copy never writes memory that a new allocation may have received.
func TestFreeArrayDuringSyncCopy(t *testing.T) {
	untilTheCopyBegins(t, "Free", freeDuringCopy)
}

// freeDuringCopy runs the scenario once; false when the copy began too late.
func freeDuringCopy(t *testing.T) bool {
	dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: time.Millisecond})
	require.NoError(t, err)
	defer dev.Close()
	c, err := transfer.New(dev)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	d, _, copied, resume := startPausedCopy(t, dev, c)
	defer resume()
	freed := make(chan error, 1)
	go func() { freed <- d.Free() }()
	var held int64
	select {
	case err := <-freed:
		require.NoError(t, err, "Free marks the array freed at once")
		held = dev.Ledger().Current(accounting.Device)
		resume()
	case <-time.After(2 * time.Second):
		// Freeing the memory waits for the device's default stream, where
		// the copy waits: Free did not leave the memory to the copy.
		resume()
		<-freed
		if errors.Is(<-copied, devarray.ErrFreed) {
			return false // Free came before the copy began
		}
		t.Fatal("Free freed the memory of a running copy (it waited for the copy's stream)")
	}
	assert.ErrorIs(t, d.Err(), devarray.ErrFreed)
	cerr := <-copied
	if errors.Is(cerr, devarray.ErrFreed) {
		return false
	}
	require.NoError(t, cerr, "the copy began before Free: it completes")
	assert.Equal(t, d.NBytes(), held, "the memory stayed while the copy ran")
	assert.Zero(t, dev.Ledger().Current(accounting.Device), "and is given back once it returned")
	return true
}
