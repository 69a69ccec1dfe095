package accounting_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/accounting"
)

// An OutOfMemoryError's message names who refused and every figure known:
// the device's free and total bytes whenever they are known (DeviceTotal
// is -1 only when they are not), a total of 0 bytes included.
func TestOutOfMemoryErrorMessage(t *testing.T) {
	requested, inUse := 1+rand.Int64N(1<<30), rand.Int64N(1<<30)
	for _, tc := range []struct {
		name        string
		err         accounting.OutOfMemoryError
		has, hasNot []string
	}{
		{"the ledger's limit, the device's figures known",
			accounting.OutOfMemoryError{Kind: accounting.Device, Requested: requested, InUse: inUse, Limit: 2048, DeviceFree: 3 << 30, DeviceTotal: 80 << 30, ByLimit: true},
			[]string{"the ledger's device limit is 2.00 KiB", "device free 3.00 GiB of 80.00 GiB"}, []string{"has no room"}},
		{"the device, its figures known",
			accounting.OutOfMemoryError{Kind: accounting.Device, Requested: requested, InUse: inUse, DeviceFree: 512, DeviceTotal: 80 << 30},
			[]string{"the device has no room", "device free 512 B of 80.00 GiB"}, []string{"limit"}},
		{"the device, its figures unknown",
			accounting.OutOfMemoryError{Kind: accounting.Pinned, Requested: requested, InUse: inUse, DeviceFree: -1, DeviceTotal: -1},
			[]string{"the device has no room"}, []string{"device free"}},
		{"a device that reports no memory at all",
			accounting.OutOfMemoryError{Kind: accounting.Device, Requested: requested, InUse: inUse, DeviceFree: 0, DeviceTotal: 0},
			[]string{"the device has no room", "device free 0 B of 0 B"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := tc.err.Error()
			assert.Contains(t, msg, "out of memory: "+accounting.FormatBytes(requested)+" of "+tc.err.Kind.String())
			assert.Contains(t, msg, "with "+accounting.FormatBytes(inUse)+" in use")
			for _, s := range tc.has {
				assert.Contains(t, msg, s)
			}
			for _, s := range tc.hasNot {
				assert.NotContains(t, msg, s)
			}
		})
	}
}
