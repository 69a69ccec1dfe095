//go:build cuda && cudaemu && linux

package transfer_test

import (
	"strings"

	"github.com/cuarray/cuarray/device/cuda/emulated"
)

// driverRefusals returns the emulated driver's failed copies and
// registrations so far (cuMemcpy*, cuMemHostRegister): what a range
// partly page-locked, handed to the driver, makes it answer.
func driverRefusals() []string {
	var out []string
	for _, f := range emulated.Failures() {
		if s := f.String(); strings.HasPrefix(s, "cuMemcpy") || strings.HasPrefix(s, "cuMemHostRegister") {
			out = append(out, s)
		}
	}
	return out
}
