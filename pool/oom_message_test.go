package pool_test

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/sim"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/pool"
)

// sizeRe matches a size as accounting.FormatBytes writes it.
const sizeRe = `([0-9.]+ (?:[KMGTPE]i)?B)`

// parseSize reads a size the message printed back into bytes.
func parseSize(t *testing.T, s string) int64 {
	t.Helper()
	n, err := accounting.ParseBytes(s)
	require.NoError(t, err, "%q", s)
	return n
}

// An out-of-memory message accounts for every byte it names: the device's
// total is the pool's bytes in use and cached, the bytes held outside the
// pool and the free bytes; and where the free bytes are more than the
// request, the message says they lie in blocks smaller than it (sim's
// arena tells its largest free block) with the fragmentation that figure
// makes, 1 − largest free block / free bytes. The device's memory is cut
// in holes around allocations made outside the pool: free bytes enough
// for the request, no one block of them.
func TestOutOfMemoryMessageAddsUp(t *testing.T) {
	const g = sim.Alignment
	for _, tc := range []struct {
		name      string
		fragments bool // the free bytes are more than the request, in smaller blocks
	}{
		{"free bytes in holes each smaller than the request", true},
		{"fewer free bytes than the request", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// the device: the pool's block, a hole, a block outside the pool, a hole
			inPool, hole1, outside, hole2 := g*(64+rand.Int64N(64)), g*(32+rand.Int64N(64)), g*(16+rand.Int64N(64)), g*(32+rand.Int64N(64))
			total := inPool + hole1 + outside + hole2
			dev, err := sim.New(sim.Config{Memory: total})
			require.NoError(t, err)
			defer dev.Close()
			p := pool.New(dev)
			defer p.Release()
			used, err := p.Alloc(inPool)
			require.NoError(t, err)
			defer p.Free(used)
			var ptrs []devarray.Ptr
			for _, n := range []int64{hole1, outside, hole2} {
				q, err := dev.Malloc(n)
				require.NoError(t, err)
				ptrs = append(ptrs, q)
			}
			require.NoError(t, dev.Free(ptrs[0]))
			require.NoError(t, dev.Free(ptrs[2]))
			defer dev.Free(ptrs[1])
			free, largest := hole1+hole2, max(hole1, hole2)
			request := largest + g*(1+rand.Int64N((free-largest)/g)) // more than either hole, no more than both
			if !tc.fragments {
				request = free + g*(1+rand.Int64N(64))
			}

			_, err = p.Alloc(request)
			var oom *pool.OutOfMemoryError
			require.ErrorAs(t, err, &oom)
			msg := err.Error()
			t.Log(msg)
			m := regexp.MustCompile(`allocating ` + sizeRe + ` \(free ` + sizeRe + `, total ` + sizeRe + `, limit none; in use ` + sizeRe + `, cached ` + sizeRe + `\)`).FindStringSubmatch(msg)
			require.NotNil(t, m, msg)
			gotRequest, gotFree, gotTotal, gotInUse, gotCached := parseSize(t, m[1]), parseSize(t, m[2]), parseSize(t, m[3]), parseSize(t, m[4]), parseSize(t, m[5])
			sum := regexp.MustCompile(`total ` + sizeRe + ` = in use ` + sizeRe + ` \+ cached ` + sizeRe + ` \+ ` + sizeRe + ` outside the pool \+ free ` + sizeRe).FindStringSubmatch(msg)
			require.NotNil(t, sum, "the message sums the device's bytes: %s", msg)
			assert.Equal(t, []string{m[3], m[4], m[5], m[2]}, []string{sum[1], sum[2], sum[3], sum[5]}, "the sum names the figures given before it")
			gotOutside := parseSize(t, sum[4])
			// Sizes print to two decimals: they add up to within one unit's rounding.
			assert.InDelta(t, gotTotal, gotInUse+gotCached+gotOutside+gotFree, float64(gotTotal)/100,
				"total = in use + cached + outside + free: %s", msg)
			assert.Equal(t, total, oom.InUse+oom.Cached+(oom.Total-oom.Free-oom.InUse-oom.Cached)+oom.Free, "the figures themselves")
			assert.Equal(t, []int64{request, free, total, inPool, 0}, []int64{oom.Requested, oom.Free, oom.Total, oom.InUse, oom.Cached})
			assert.Equal(t, outside, oom.Total-oom.Free-oom.InUse-oom.Cached, "the bytes outside the pool")
			assert.InDelta(t, request, gotRequest, float64(request)/100)
			frag := regexp.MustCompile(`the free ` + sizeRe + ` lie in blocks of at most ` + sizeRe + `, less than requested \(fragmentation ([0-9.]+), 1 − largest free block / free bytes\)`).FindStringSubmatch(msg)
			if !tc.fragments {
				assert.Nil(t, frag, "fewer free bytes than requested need no more reason: %s", msg)
				return
			}
			require.NotNil(t, frag, "free bytes enough, in smaller blocks: %s", msg)
			assert.Equal(t, largest, oom.LargestFree)
			assert.Equal(t, m[2], frag[1], "the free bytes as named before")
			assert.Less(t, parseSize(t, frag[2]), gotRequest, "the largest free block cannot hold the request")
			assert.GreaterOrEqual(t, gotFree, gotRequest, "though the free bytes are as many")
			f, perr := strconv.ParseFloat(frag[3], 64)
			require.NoError(t, perr)
			assert.Equal(t, fmt.Sprintf("%.3f", 1-float64(largest)/float64(free)), fmt.Sprintf("%.3f", f), "fragmentation = 1 − largest free block / free bytes")
			var devErr *accounting.OutOfMemoryError
			require.ErrorAs(t, err, &devErr, "the device's own error")
			assert.Equal(t, largest, devErr.DeviceLargestFree)
			assert.Contains(t, devErr.Error(), fmt.Sprintf("device free %s of %s, the largest free block %s (fragmentation %s)",
				accounting.FormatBytes(free), accounting.FormatBytes(total), accounting.FormatBytes(largest), frag[3]))
		})
	}
}
