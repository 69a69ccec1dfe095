package interop_test

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

// TestMain runs the IPC child process when the IPC tests start this test
// binary as one (CUARRAY_IPC_CHILD set), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(ipcChildEnv) != "" {
		os.Exit(ipcChild())
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
		return report()
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
	return report()
}
