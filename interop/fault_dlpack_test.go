//go:build cgo

package interop_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
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
