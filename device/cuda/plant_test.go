//go:build cuda

package cuda

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPlantedHang blocks forever in a driver call when CUARRAY_PLANT_HANG=1,
// and skips otherwise. It is how the GPU run's script (scripts/gpu-run.sh)
// is shown to cost a hung test only itself: the test binary's timeout panic
// must name this test as running, its goroutine dump must show it waiting in
// cuStreamSynchronize, and the run again without it must run every test
// after it (make gpu-hang-check, make gpu-rehearse). The stream is held by a
// host function that is never let go (Hold), then synchronized: as on a
// GPU when a stream waits for work that cannot complete.
func TestPlantedHang(t *testing.T) {
	if os.Getenv("CUARRAY_PLANT_HANG") != "1" {
		t.Skip("a planted hang: runs only with CUARRAY_PLANT_HANG=1")
	}
	d := open(t)
	s, err := d.NewStream()
	require.NoError(t, err)
	_, err = s.(*stream).Hold() // never resumed
	require.NoError(t, err)
	t.Log("the stream is held for good; synchronizing it blocks until the test binary's timeout")
	require.NoError(t, s.Synchronize())
	t.Fatal("cuStreamSynchronize returned on a stream held for good")
}
