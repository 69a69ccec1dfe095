// Package testdev opens the device that cuarray's tests run on, so that one
// set of tests runs on the sim backend everywhere and on a real GPU when
// built with -tags cuda:
//
//	CUARRAY_TEST_DEVICE=spec   that device ("sim:0?mem=1GiB", "cuda:1")
//	otherwise                  cuda:0 in a build with -tags cuda, else sim:0 with 256 MiB
//
// The device is closed when the test ends, after checking that the test
// freed every byte of device and page-locked memory it allocated.
package testdev

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
)

// EnvVar names the environment variable that picks the test device.
const EnvVar = "CUARRAY_TEST_DEVICE"

// Spec returns the spec of the device tests run on.
func Spec() string {
	if s := os.Getenv(EnvVar); s != "" {
		return s
	}
	if device.CUDABuilt {
		return "cuda:0"
	}
	return "sim:0?mem=256MiB"
}

// Open opens the test device, or fails the test when it cannot.
func Open(t testing.TB) device.Device {
	t.Helper()
	dev, err := device.Open(Spec())
	if err != nil {
		t.Fatalf("open test device %q: %v", Spec(), err)
	}
	t.Cleanup(func() {
		snap := dev.Ledger().Snapshot()
		if !t.Failed() {
			for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered, accounting.IPC} {
				if s := snap.Kinds[k]; s.Current != 0 || s.Allocs != s.Frees {
					t.Errorf("%v memory leaked: current %d bytes, %d allocs, %d frees", k, s.Current, s.Allocs, s.Frees)
				}
			}
		}
		if err := dev.Close(); err != nil {
			t.Errorf("close test device: %v", err)
		}
	})
	return dev
}

// IsSim reports whether dev is the emulated device.
func IsSim(dev device.Device) bool { return dev.Info().Backend == "sim" }

// RandomBytes returns n fresh random bytes: tests never copy zeros.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}
