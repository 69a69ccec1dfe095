package devarray_test

import (
	"encoding/json"
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/cuarray/cuarray/devarray"
)

// gatherLayout is a strided view of a C-contiguous parent, as
// bench/peers/numpy_gather.py builds it:
// np.flip(parent[start:stop:step, ...], flip).transpose(perm).
type gatherLayout struct {
	Name   string   `json:"name"`
	DType  string   `json:"dtype"`
	Parent []int    `json:"parent"`
	Slices [][3]int `json:"slices"`
	Flip   []int    `json:"flip"`
	Perm   []int    `json:"perm"`
}

// gatherLayouts are the layouts BenchmarkHostGather times against NumPy.
func gatherLayouts() []gatherLayout {
	const n = 4096
	full := [3]int{0, n, 1}
	var out []gatherLayout
	for _, dt := range []string{"float32", "float64"} {
		out = append(out,
			gatherLayout{Name: "contiguous", Parent: []int{n, n}, Slices: [][3]int{full, full}, Perm: []int{0, 1}},
			gatherLayout{Name: "row-slice", Parent: []int{n, n}, Slices: [][3]int{{0, n, 2}, full}, Perm: []int{0, 1}},
			gatherLayout{Name: "column-range", Parent: []int{n, n}, Slices: [][3]int{full, {1024, 3072, 1}}, Perm: []int{0, 1}},
			gatherLayout{Name: "column-step", Parent: []int{n, n}, Slices: [][3]int{full, {0, n, 2}}, Perm: []int{0, 1}},
			gatherLayout{Name: "transposed-4096", Parent: []int{n, n}, Slices: [][3]int{full, full}, Perm: []int{1, 0}},
			gatherLayout{Name: "3d-permuted-201", Parent: []int{256, 256, 256}, Slices: [][3]int{{0, 256, 1}, {0, 256, 1}, {0, 256, 1}}, Perm: []int{2, 0, 1}},
			gatherLayout{Name: "3d-permuted-021", Parent: []int{256, 256, 256}, Slices: [][3]int{{0, 256, 1}, {0, 256, 1}, {0, 256, 1}}, Perm: []int{0, 2, 1}},
			gatherLayout{Name: "negative-strides", Parent: []int{n, n}, Slices: [][3]int{full, full}, Flip: []int{0, 1}, Perm: []int{0, 1}},
		)
		for i := len(out) - 8; i < len(out); i++ {
			out[i].DType = dt
			out[i].Name += "/" + dt
		}
	}
	return out
}

// view returns the layout's parent memory (random bytes, from benchAlloc)
// and the view's element 0 offset, shape and byte strides in it.
func (l gatherLayout) view() (mem []byte, free func(), zero int64, shape []int, strides []int64, item int64) {
	item = map[string]int64{"float32": 4, "float64": 8}[l.DType]
	strides = contiguousStrides(l.Parent, item)
	n := item
	for _, d := range l.Parent {
		n *= int64(d)
	}
	mem, free = benchAlloc(int(n))
	for i := 0; i < len(mem); i += 8 {
		v := rand.Uint64()
		for k := 0; k < 8 && i+k < len(mem); k++ {
			mem[i+k] = byte(v >> (8 * k))
		}
	}
	sliced := make([]int, len(l.Parent))
	st := make([]int64, len(l.Parent))
	for a, s := range l.Slices {
		zero += int64(s[0]) * strides[a]
		sliced[a] = (s[1] - s[0] + s[2] - 1) / s[2]
		st[a] = strides[a] * int64(s[2])
	}
	for _, a := range l.Flip {
		zero += int64(sliced[a]-1) * st[a]
		st[a] = -st[a]
	}
	shape = make([]int, len(l.Perm))
	strides = make([]int64, len(l.Perm))
	for i, p := range l.Perm {
		shape[i], strides[i] = sliced[p], st[p]
	}
	return mem, free, zero, shape, strides, item
}

// numpyGather times the layout's copy with NumPy (bench/peers/numpy_gather.py):
// the faster of np.ascontiguousarray and np.copyto into a buffer, best of
// repeats, in seconds.
func numpyGather(l gatherLayout, repeats int) (float64, error) {
	spec, err := json.Marshal([]gatherLayout{l})
	if err != nil {
		return 0, err
	}
	out, err := exec.Command("/usr/bin/python3", "../bench/peers/numpy_gather.py", string(spec), fmt.Sprint(repeats)).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return 0, fmt.Errorf("numpy_gather.py: %w: %s", err, ee.Stderr)
	} else if err != nil {
		return 0, fmt.Errorf("numpy_gather.py: %w", err)
	}
	var res map[string]map[string]*float64
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, err
	}
	r := res[l.Name]
	if r == nil || r["copyto"] == nil {
		return 0, fmt.Errorf("numpy_gather.py: no figure for %s in %s", l.Name, out)
	}
	np := *r["copyto"]
	if a := r["ascontiguousarray"]; a != nil && *a < np {
		np = *a
	}
	return np, nil
}

// BenchmarkHostGather times devarray.HostStrided's gather of each layout
// into a C-contiguous buffer, on one goroutine (GatherOn(…, 1)) and on
// GOMAXPROCS (Gather), and NumPy's copy of the same layout
// (bench/peers/numpy_gather.py: the faster of np.ascontiguousarray and
// np.copyto into a buffer, on NumPy's one thread) in the same run, just
// before. Go's buffers are advised to use huge pages, as NumPy's are. It reports each best time (other work on a shared machine only
// ever adds time; go1-ms, go-ms, numpy-ms) and the ratios numpy/go1 and
// numpy/go: NumPy's seconds over Go's, above 1 faster than NumPy.
// Without /usr/bin/python3 and NumPy it reports Go alone.
//
//	go test -run '^$' -bench HostGather -benchtime 10x ./devarray
func BenchmarkHostGather(b *testing.B) {
	for _, l := range gatherLayouts() {
		b.Run(l.Name, func(b *testing.B) {
			np, peerErr := numpyGather(l, max(b.N, 5))
			if peerErr != nil {
				b.Logf("no NumPy figure: %v", peerErr)
			}
			mem, free, zero, shape, strides, item := l.view()
			defer free()
			h, err := devarray.NewHostStrided(mem, zero, shape, strides, item)
			if err != nil {
				b.Fatal(err)
			}
			dst, freeDst := benchAlloc(int(h.Len()))
			defer freeDst()
			if err := h.Gather(dst, 0); err != nil { // warm-up: dst paged in
				b.Fatal(err)
			}
			b.SetBytes(2 * h.Len())
			b.ResetTimer()
			best := [2]time.Duration{math.MaxInt64, math.MaxInt64}
			for range b.N {
				for i, workers := range []int{1, runtime.GOMAXPROCS(0)} {
					start := time.Now()
					if err := h.GatherOn(dst, 0, workers); err != nil {
						b.Fatal(err)
					}
					best[i] = min(best[i], time.Since(start))
				}
			}
			b.StopTimer()
			b.ReportMetric(best[0].Seconds()*1e3, "go1-ms")
			b.ReportMetric(best[1].Seconds()*1e3, "go-ms")
			if peerErr == nil {
				b.ReportMetric(np*1e3, "numpy-ms")
				b.ReportMetric(np/best[0].Seconds(), "numpy/go1")
				b.ReportMetric(np/best[1].Seconds(), "numpy/go")
			}
		})
	}
}
