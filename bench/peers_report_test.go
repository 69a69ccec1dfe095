package bench_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/internal/testdev"
	"github.com/cuarray/cuarray/transfer"
)

// bench/peers/report.py joins a `cuarray bench -bidir -json` run with the
// peers' lines: the wall-clock and event-timed ratio tables, the latency
// of small copies, and PyTorch's ways from pageable memory (.to('cuda'),
// .pin_memory() — the pinning cost — and both) beside cuarray's staged
// path. The peers' lines here are made up in torch_transfer.py's format;
// the test checks the joining, not PyTorch.
func TestPeersReport(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	dev := testdev.Open(t)
	r, err := bench.Run(dev, bench.Config{Sizes: []int64{4 << 10, 1 << 20}, Budget: 2 << 20, MaxRepeats: 5, Bidir: true, PCIe: 1000,
		Paths: []transfer.Path{transfer.PathDirect, transfer.PathPinned, transfer.PathStaged}})
	require.NoError(t, err)
	dir := t.TempDir()
	js, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench.json"), js, 0o644))
	var lines []string
	for _, n := range []int64{4 << 10, 1 << 20} {
		for _, p := range []struct {
			path, dir string
			gbps      float64
		}{{"pinned", "HtoD", 2}, {"pinned", "DtoH", 2}, {"direct", "HtoD", 1}, {"direct", "DtoH", 1}, {"pin_memory", "HtoH", 4},
			{"pin+to", "HtoD", 0.8}, {"bidir", "HtoD+DtoH", 4}} {
			rec := map[string]any{"peer": "torch", "path": p.path, "direction": p.dir, "bytes": n, "repeats": 3,
				"median_s": float64(n) / p.gbps / 1e9, "GB_per_s": p.gbps}
			if p.path != "pin_memory" {
				rec["event_GB_per_s"], rec["event_median_s"] = p.gbps*1.1, float64(n)/p.gbps/1.1e9
				if n <= bench.LatencyMaxBytes {
					rec["latency_us"] = float64(n) / p.gbps / 1.1e3
				}
			} else {
				rec["first_s"], rec["first_GB_per_s"] = float64(n)/1e9, 1.0
			}
			b, err := json.Marshal(rec)
			require.NoError(t, err)
			lines = append(lines, string(b))
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "peer-torch-transfer.json"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out, err := exec.Command(py, "peers/report.py", dir).CombinedOutput()
	require.NoError(t, err, string(out))
	text := string(out)
	for _, want := range []string{
		"## Transfers (GB/s, median)", "event-timed median", "## Latency (µs", "## From pageable memory",
		"torch .to('cuda') pageable", "torch .pin_memory()", "torch .pin_memory().to('cuda')",
		"| bidir | HtoD+DtoH | 1 MiB |",
	} {
		assert.Contains(t, text, want)
	}
	staged := find(t, r, "staged", "HtoD", 1<<20)
	assert.Contains(t, text, fmt.Sprintf("| 1 MiB | %.2f |", staged.GBps), "cuarray's staged figure in the pageable table")
	assert.Contains(t, text, fmt.Sprintf("| %.2f |", staged.GBps/0.8), "staged over torch's pin_memory().to('cuda')")
	bidir := find(t, r, bench.Bidir, bench.BidirDirection, 1<<20)
	assert.Contains(t, text, fmt.Sprintf("| %.2f | 4.00 | %.2f |", bidir.GBps, bidir.GBps/4), "bidir beside torch's")
}
