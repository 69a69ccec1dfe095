//go:build cgo

package interop_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/interop"
)

func init() { faultDLPack = dlpackFault }

// dlpackFault exports b through both DLPack ABIs, as it is and as a copy,
// imports each back and reads it: a read that succeeds reads want (the
// caller waited for b's pending work), a failure is the fault, and the
// deleters (through the import's Free, or DeleteDLPack) never panic.
func dlpackFault(t *testing.T, dev *sim.Device, b *devarray.DevArray, want []byte) {
	for _, abi := range dlpackABIs {
		for _, copied := range []bool{false, true} {
			var opts []interop.DLPackOption
			if copied {
				opts = append(opts, interop.DLPackCopy())
			}
			p, err := abi.export(b, opts...)
			if !faultErr(t, err, "export DLPack "+abi.name) {
				continue
			}
			c, err := abi.importer(dev, p)
			require.NoError(t, err, "an import checks fields; it touches no device")
			got := make([]byte, len(want))
			if err := c.CopyTo(got); faultErr(t, err, "CopyTo of a DLPack import") {
				assert.Equal(t, want, got, "a DLPack import (copy %v, %s) reads the array", copied, abi.name)
			}
			if copied {
				faultErr(t, c.Free(), "Free of a copied DLPack import (its deleter frees the copy)")
			} else {
				assert.NoError(t, c.Free(), "Free of a DLPack import releases a hold")
			}
			// a tensor no one imported: the producer deletes it
			if p, err := abi.export(b, opts...); faultErr(t, err, "export DLPack "+abi.name) {
				abi.remove(p)
			}
		}
	}
	assert.Zero(t, b.Holds(), "every deleter released its hold")
}

// TestFaultDLPackDeleterAfterClose: a consumer may call a tensor's
// deleter after the producer's device faulted and was closed (a Python
// object collected late): the deleter returns without a panic, for a
// borrowed tensor and a copy, on both ABIs.
func TestFaultDLPackDeleterAfterClose(t *testing.T) {
	for _, abi := range dlpackABIs {
		for _, copied := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/copy=%v", abi.name, copied), func(t *testing.T) {
				dev, err := sim.New(sim.Config{Memory: 1 << 20, Latency: time.Millisecond})
				require.NoError(t, err)
				a, err := devarray.FromBytes(dev, testdev.RandomBytes(512), devarray.Uint8, 512)
				require.NoError(t, err)
				var opts []interop.DLPackOption
				if copied {
					opts = append(opts, interop.DLPackCopy())
				}
				p, err := abi.export(a, opts...)
				require.NoError(t, err)
				dev.FailFault(1)
				assert.ErrorIs(t, dev.Memset(a.Ptr(), 1, 512), device.ErrContextFailed)
				if copied {
					assert.ErrorIs(t, a.Free(), device.ErrContextFailed, "the owner's free after the fault")
				} else {
					assert.NoError(t, a.Free(), "the export holds the memory: the free waits for the deleter")
				}
				require.NoError(t, dev.Close())
				assert.NotPanics(t, func() { abi.remove(p) }, "the deleter after the device's Close")
				assert.Zero(t, a.Holds())
				assert.Zero(t, dev.Ledger().Current(accounting.Device))
			})
		}
	}
}
