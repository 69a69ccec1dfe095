package interop_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// TestMain runs the IPC child process when the IPC tests start this test
// binary as one (CUARRAY_IPC_CHILD set), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(ipcChildEnv) != "" {
		os.Exit(ipcChild())
	}
	if os.Getenv(poolChildEnv) != "" {
		os.Exit(poolChild())
	}
	os.Exit(m.Run())
}

const ipcChildEnv = "CUARRAY_IPC_CHILD"

// ipcChildResult is what the child reports on stdout, as JSON.
type ipcChildResult struct {
	Error         string `json:"error,omitempty"`
	Matched       bool   `json:"matched"`        // it read what the parent wrote
	Opened        int64  `json:"ipc_opened"`     // ledger: ipc allocs
	Closed        int64  `json:"ipc_closed"`     // ledger: ipc frees
	Current       int64  `json:"ipc_current"`    // ledger: ipc bytes after closing
	DeviceAllocs  int64  `json:"device_allocs"`  // ledger: device allocations (must be 0)
	SameAddresses bool   `json:"same_addresses"` // the child's pointer equals the parent's (it must not on sim)
	Stale         bool   `json:"stale"`          // the open failed with driver.ErrStaleIPCHandle

	// With CUARRAY_IPC_TWICE=1 the child opens the handle twice.
	SamePointer         bool `json:"same_pointer"`           // both openings have the same address
	ReadAfterFirstClose bool `json:"read_after_first_close"` // the second still reads the bytes after the first is freed
	ExtraCloseRefused   bool `json:"extra_close_refused"`    // a third IPCClose is driver.ErrInvalidPointer
}

// ipcChild opens the descriptor in $CUARRAY_IPC_DESC on the test device,
// checks its bytes against $CUARRAY_IPC_WANT (hex), writes their bitwise
// complement back, closes it and reports the ledger.
func ipcChild() int {
	var res ipcChildResult
	report := func() int {
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		return 0
	}
	dev, err := device.Open(testdev.Spec())
	if err != nil {
		res.Error = err.Error()
		return report()
	}
	defer dev.Close()
	d, err := interop.ParseIPC([]byte(os.Getenv("CUARRAY_IPC_DESC")))
	if err != nil {
		res.Error = err.Error()
		return report()
	}
	a, err := interop.OpenIPC(dev, d)
	if err != nil {
		res.Error = err.Error()
		res.Stale = errors.Is(err, driver.ErrStaleIPCHandle)
		return report()
	}
	base := a.Ptr() - devarray.Ptr(d.Offset) // the allocation's address here
	if os.Getenv("CUARRAY_IPC_TWICE") != "" {
		if err := ipcChildTwice(dev, d, a, &res); err != nil {
			res.Error = err.Error()
			return report()
		}
	}
	got := make([]byte, a.NBytes())
	if err := a.CopyTo(got); err != nil {
		res.Error = err.Error()
		return report()
	}
	res.Matched = hex.EncodeToString(got) == os.Getenv("CUARRAY_IPC_WANT")
	for i := range got {
		got[i] = ^got[i]
	}
	if err := a.CopyFrom(got); err != nil {
		res.Error = err.Error()
		return report()
	}
	res.SameAddresses = fmt.Sprint(uint64(a.Ptr())) == os.Getenv("CUARRAY_IPC_PARENT_PTR")
	if err := a.Free(); err != nil {
		res.Error = err.Error()
	}
	snap := dev.Ledger().Snapshot()
	res.Opened, res.Closed = snap.Kinds[accounting.IPC].Allocs, snap.Kinds[accounting.IPC].Frees
	res.Current = snap.Kinds[accounting.IPC].Current
	res.DeviceAllocs = snap.Kinds[accounting.Device].Allocs
	if os.Getenv("CUARRAY_IPC_TWICE") != "" {
		res.ExtraCloseRefused = errors.Is(dev.IPCClose(base), driver.ErrInvalidPointer)
	}
	return report()
}

// ipcChildTwice opens d a second time beside a, checks that both have the
// same address, frees the second and checks that a still reads the bytes
// (the child goes on with a, which it frees last).
func ipcChildTwice(dev device.Device, d interop.IPCDescriptor, a *devarray.DevArray, res *ipcChildResult) error {
	b, err := interop.OpenIPC(dev, d)
	if err != nil {
		return fmt.Errorf("second open: %w", err)
	}
	res.SamePointer = a.Ptr() == b.Ptr()
	if err := b.Free(); err != nil {
		return fmt.Errorf("free the second opening: %w", err)
	}
	got := make([]byte, a.NBytes())
	if err := a.CopyTo(got); err != nil {
		return fmt.Errorf("read after the first close: %w", err)
	}
	res.ReadAfterFirstClose = hex.EncodeToString(got) == os.Getenv("CUARRAY_IPC_WANT")
	return nil
}
