package bench_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device/sim"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/transfer"
)

// The host's memory copy curve names each size once, in the report, its
// table's header and ceiling line and its JSON: the out-of-cache
// measurement is the curve's last entry, marked so, and no size of the
// curve below it repeats it (64 MiB was listed twice where
// OutOfCacheBytes is 64 MiB).
func TestHostCopyCurveNamesEachSizeOnce(t *testing.T) {
	dev, err := sim.New(sim.Config{Memory: 16 << 20})
	require.NoError(t, err)
	defer dev.Close()
	size := int64(rand.IntN(60<<10) + 4<<10)
	r, err := bench.Run(dev, bench.Config{Sizes: []int64{size}, Budget: 3 * size, Paths: []transfer.Path{transfer.PathDirect}})
	require.NoError(t, err)

	require.NotEmpty(t, r.HostCopy)
	last := r.HostCopy[len(r.HostCopy)-1]
	assert.True(t, last.OutOfCache, "the last measurement is the out-of-cache one")
	assert.Equal(t, bench.OutOfCacheBytes(), last.Bytes)
	for i, m := range r.HostCopy[:len(r.HostCopy)-1] {
		assert.False(t, m.OutOfCache, "entry %d (%s)", i, accounting.FormatBytes(m.Bytes))
		assert.Less(t, m.Bytes, r.HostCopy[i+1].Bytes, "sizes rise, each once: %+v", r.HostCopy)
	}

	var js struct {
		HostCopy []struct {
			Bytes      int64 `json:"bytes"`
			OutOfCache bool  `json:"out_of_cache"`
		} `json:"host_copy"`
		Ceilings struct {
			HostLink struct {
				BySize []struct {
					FromBytes int64 `json:"from_bytes"`
				} `json:"by_size"`
			} `json:"host_link"`
		} `json:"ceilings"`
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &js))
	jsonSizes, ceilingSizes := []int64{}, []int64{}
	outOfCache := 0
	for _, h := range js.HostCopy {
		jsonSizes = append(jsonSizes, h.Bytes)
		if h.OutOfCache {
			outOfCache++
		}
	}
	for _, c := range js.Ceilings.HostLink.BySize {
		ceilingSizes = append(ceilingSizes, c.FromBytes)
	}
	assert.Equal(t, 1, outOfCache, "one out_of_cache entry in %s", b)

	table := r.Table()
	header, ceiling := proseLine(t, table, "host memory copy, GB/s at each size: "), proseLine(t, table, "ceiling: host link")
	for _, tc := range []struct {
		name  string
		sizes []string // each size as the output names it
	}{
		{"table header", regexp.MustCompile(`at ([0-9.]+ [KMG]?i?B)`).FindAllString(header, -1)},
		{"ceiling line", regexp.MustCompile(`from ([0-9.]+ [KMG]?i?B)`).FindAllString(strings.SplitN(ceiling, "(", 2)[0], -1)},
		{"JSON host_copy", formatAll(jsonSizes)},
		{"JSON ceiling by_size", formatAll(ceilingSizes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Len(t, tc.sizes, len(r.HostCopy), "one entry per measured size: %q", tc.sizes)
			seen := map[string]bool{}
			for _, s := range tc.sizes {
				assert.False(t, seen[s], "%s listed twice in %q", s, tc.sizes)
				seen[s] = true
			}
		})
	}
	assert.Contains(t, header, accounting.FormatBytes(last.Bytes)+" (out of cache)", "the out-of-cache figure is named")
	assert.Equal(t, 1, strings.Count(header, "out of cache"), header)
}

// proseLine returns the wrapped line of text of the table that begins
// with prefix, its continuation lines joined to it.
func proseLine(t *testing.T, table, prefix string) string {
	t.Helper()
	lines := strings.Split(table, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		for _, more := range lines[i+1:] {
			if !strings.HasPrefix(more, "  ") {
				break
			}
			l += " " + strings.TrimSpace(more)
		}
		return l
	}
	require.Failf(t, "no line", "%q in\n%s", prefix, table)
	return ""
}

// formatAll formats each size as the table does.
func formatAll(sizes []int64) []string {
	out := make([]string, len(sizes))
	for i, n := range sizes {
		out[i] = accounting.FormatBytes(n)
	}
	return out
}
