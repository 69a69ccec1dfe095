package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// TestManagedMemory runs the command with -memory managed and -mode both,
// on a device large enough and on one smaller than the sinograms and the
// volume together: the resident run in managed memory gives the staged
// run's volume (in device memory), bit for bit; its ledger, in the JSON
// and in the text, has the bytes the driver prefetched and migrated each
// way and the page events, with evictions only where the device is too
// small; and the device ends with no device or managed memory allocated.
func TestManagedMemory(t *testing.T) {
	g := tomo.Geometry{Size: 32, Angles: 40 + rand.IntN(9), Slices: 24}
	for _, tc := range []struct {
		device   string
		streams  int
		oversubs bool // the arrays are larger than the device
	}{
		{"sim:0?mem=64MiB", 2, false},
		{"sim:0?mem=128KiB", 2, true},
		{"sim:0?mem=96KiB", 1, true},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.device, tc.streams), func(t *testing.T) {
			var dev device.Device
			saved := opened
			opened = func(d device.Device) { dev = d }
			defer func() { opened = saved }()
			args := []string{"-device", tc.device, "-size", fmt.Sprint(g.Size), "-angles", fmt.Sprint(g.Angles), "-slices", fmt.Sprint(g.Slices),
				"-mode", "both", "-memory", "managed", "-streams", fmt.Sprint(tc.streams), "-q"}
			var out, errb bytes.Buffer
			require.Equal(t, 0, run(append(args, "-json"), &out, &errb), errb.String())
			var rep struct {
				Runs []struct {
					Mode, Memory string
					Ledger       tomo.Traffic
				}
				Comparison struct {
					SameVolume bool `json:"same_volume"`
				}
			}
			require.NoError(t, json.Unmarshal(out.Bytes(), &rep), out.String())
			require.Len(t, rep.Runs, 2)
			res, staged := rep.Runs[0], rep.Runs[1]
			assert.Equal(t, []string{"resident", "managed"}, []string{res.Mode, res.Memory})
			assert.Equal(t, []string{"staged", "device"}, []string{staged.Mode, staged.Memory}, "the staged run takes device memory")
			assert.Nil(t, staged.Ledger.Managed)
			assert.True(t, rep.Comparison.SameVolume, "managed resident and staged: the same volume, bit for bit")
			m := res.Ledger.Managed
			require.NotNil(t, m)
			assert.GreaterOrEqual(t, m.Bytes, g.SinogramBytes()+g.VolumeBytes())
			assert.GreaterOrEqual(t, m.PrefetchHtoD, g.SinogramBytes(), "the sinograms prefetched up")
			assert.GreaterOrEqual(t, m.PrefetchDtoH, g.VolumeBytes(), "the volume prefetched down")
			assert.Equal(t, res.Ledger.HtoDByPath["prefetch"], m.PrefetchHtoD)
			assert.Equal(t, res.Ledger.DtoHByPath["prefetch"], m.PrefetchDtoH)
			assert.Equal(t, res.Ledger.HtoD, m.PrefetchHtoD+m.MigratedHtoD, "no copy call: only the driver moved bytes")
			if tc.oversubs {
				assert.Positive(t, m.Evictions, "the device made room by eviction")
				assert.Equal(t, 4096*m.Evictions, m.MigratedDtoH)
			} else {
				assert.Zero(t, m.Evictions)
			}
			require.NotNil(t, dev)
			for _, k := range []accounting.Kind{accounting.Device, accounting.Managed} {
				assert.Zero(t, dev.Ledger().Current(k), "%v bytes after the run", k)
			}

			if tc.streams != 1 {
				return // the text of one run is enough
			}
			out.Reset()
			require.Equal(t, 0, run(args, &out, &errb), errb.String())
			text := out.String()
			for _, want := range []string{
				"plan, resident, managed: ", "resident  in managed memory: ", "both modes give the same volume, bit for bit",
			} {
				assert.Contains(t, text, want)
			}
			f := accounting.FormatBytes // one chunk after the other: the same pages move each run
			assert.Contains(t, text, fmt.Sprintf("resident  managed pages moved: prefetched up %s, down %s; migrated up %s, down %s\n",
				f(m.PrefetchHtoD), f(m.PrefetchDtoH), f(m.MigratedHtoD), f(m.MigratedDtoH)), "the JSON's figures")
			assert.Contains(t, text, "resident  managed pages: "+count64(m.Faults, "page fault")+", "+count64(m.Evictions, "eviction")+", "+count64(m.Duplicates, "read duplicate")+"\n")
			for _, l := range strings.Split(text, "\n") {
				assert.LessOrEqual(t, len([]rune(l)), 120, "a line fits a terminal: %q", l)
			}
		})
	}
}
