package main

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// Where a replay fails on a device with free bytes enough for the
// allocation, in smaller blocks, its report says so with the device's
// figures: its fragmentation line is the device's free memory at the
// failure, 1 − largest free block / free bytes, and the pool's cache's
// figure is named as the cache's. example:fbp on 128 KiB through the pool
// fails allocating 56.75 KiB with 71.75 KiB free, its largest block 45 KiB.
func TestReplayFragmentationAtFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"through the pool", []string{"-device", "sim:0?mem=128KiB", "-pool=on"}},
		{"straight on the device", []string{"-device", "sim:0?mem=128KiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := replayJSON(t, append([]string{"example:fbp"}, tc.args...)...)
			require.False(t, r.Fits)
			f := r.Failure
			require.NotNil(t, f)
			require.NotNil(t, f.Fragmentation, "sim tells its largest free block: %+v", f)
			assert.InDelta(t, 1-float64(f.DeviceLargestFree)/float64(f.DeviceFree), *f.Fragmentation, 1e-12)
			assert.LessOrEqual(t, f.DeviceLargestFree, f.DeviceFree)
			assert.Less(t, f.DeviceLargestFree, f.Bytes, "the largest free block cannot hold the allocation")
			code, out, stderr := runCmd(append([]string{"replay", "example:fbp"}, tc.args...)...)
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, fmt.Sprintf("fragmentation  %.3f of the device's free memory at the failure (1 − largest free block %s / free %s)",
				*f.Fragmentation, accounting.FormatBytes(f.DeviceLargestFree), accounting.FormatBytes(f.DeviceFree)))
			if r.Pool {
				assert.Regexp(t, regexp.MustCompile(`fragmentation  [0-9.]+ of the pool's cache when reserved peaked`), out)
			}
		})
	}
}
