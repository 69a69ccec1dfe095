package bench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/transfer"
)

// Config says what to measure. Zero fields take the defaults.
type Config struct {
	Sizes []int64         // bytes per copy (default DefaultSizes)
	Paths []transfer.Path // default: direct, pinned, staged, mapped, d2d
	// Budget is roughly the bytes moved per measurement: repeats are
	// Budget/size, at least MinRepeats and at most MaxRepeats.
	Budget                 int64
	MinRepeats, MaxRepeats int
	// PCIe is the host link's bandwidth per direction in GB/s; 0: from
	// the device's model where known (PCIeFor), else no ratio.
	PCIe float64
	// Progress, when set, gets a line per measurement.
	Progress io.Writer
	// Copier are options for the transfer.Copier that makes the copies (the staging ring).
	Copier []transfer.Option
}

// DefaultSizes are 4 KiB, 1 MiB, 64 MiB and 1 GiB.
var DefaultSizes = []int64{4 << 10, 1 << 20, 64 << 20, 1 << 30}

// DefaultPaths are the paths a bench measures unless told.
var DefaultPaths = []transfer.Path{transfer.PathDirect, transfer.PathPinned, transfer.PathStaged, transfer.PathMapped, transfer.PathD2D}

func (c Config) withDefaults() Config {
	if len(c.Sizes) == 0 {
		c.Sizes = DefaultSizes
	}
	if len(c.Paths) == 0 {
		c.Paths = DefaultPaths
	}
	if c.Budget <= 0 {
		c.Budget = 256 << 20
	}
	if c.MinRepeats <= 0 {
		c.MinRepeats = 3
	}
	if c.MaxRepeats < c.MinRepeats {
		c.MaxRepeats = max(c.MinRepeats, 50)
	}
	return c
}

// repeats returns the timed copies for one measurement of size bytes.
func (c Config) repeats(size int64) int {
	return int(min(max(c.Budget/size, int64(c.MinRepeats)), int64(c.MaxRepeats)))
}

// Counts are the ledger's figures for the timed copies of one measurement.
type Counts struct {
	Requested   int64 `json:"requested_bytes"`    // size × repeats
	Bytes       int64 `json:"bytes"`              // recorded on the path and direction measured
	Copies      int64 `json:"copies"`             // driver or kernel copies recorded there
	Other       int64 `json:"other_bytes"`        // recorded in the same direction on other paths
	HostStaging int64 `json:"host_staging_bytes"` // host-side copies of the staged path
	OK          bool  `json:"ok"`                 // Bytes == Requested, Other == 0, HostStaging as the path needs
}

// Result is one measurement: a path, a direction and a size.
type Result struct {
	Path          string   `json:"path"`
	Direction     string   `json:"direction"`
	Size          int64    `json:"bytes"`
	Repeats       int      `json:"repeats"`
	MedianSeconds float64  `json:"median_s"`
	GBps          float64  `json:"GB_per_s"` // median, 10^9 bytes per second
	MinGBps       float64  `json:"min_GB_per_s"`
	MaxGBps       float64  `json:"max_GB_per_s"`
	VsPinned      *float64 `json:"ratio_to_pinned,omitempty"`  // GBps / the pinned path's, same direction and size
	VsCopy        *float64 `json:"ratio_to_go_copy,omitempty"` // GBps / Go's copy() of the same size
	VsPCIe        *float64 `json:"ratio_to_pcie,omitempty"`    // GBps / the link's bandwidth
	Ledger        *Counts  `json:"ledger,omitempty"`
}

// Report is a whole bench run.
type Report struct {
	Device   string    `json:"device"`
	Model    string    `json:"model"`
	Driver   string    `json:"driver,omitempty"`
	Date     time.Time `json:"date"`
	PCIeGBps float64   `json:"pcie_GB_per_s,omitempty"`
	Results  []Result  `json:"results"`
}

// PCIeFor returns the host link bandwidth per direction, in GB/s, of a GPU
// model it knows (PCIe generation × 16 lanes, theoretical), else 0.
func PCIeFor(model string) float64 {
	for _, m := range []struct {
		name string
		gbps float64
	}{{"H200", 64}, {"H100", 64}, {"L40", 32}, {"A100", 32}, {"A10", 32}, {"V100", 16}, {"T4", 16}} {
		if strings.Contains(model, m.name) {
			return m.gbps
		}
	}
	return 0
}

// Run measures every path, direction and size of cfg on dev. It checks
// each copy's data once, after the timed repeats.
func Run(dev driver.Device, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	info := dev.Info()
	r := &Report{Device: info.Name, Model: info.Model, Driver: info.Driver, Date: time.Now().UTC(), PCIeGBps: cfg.PCIe}
	if r.PCIeGBps == 0 {
		r.PCIeGBps = PCIeFor(info.Model)
	}
	c, err := transfer.New(dev, cfg.Copier...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for _, size := range cfg.Sizes {
		if size <= 0 {
			return nil, fmt.Errorf("bench: size %d: %w", size, driver.ErrInvalidValue)
		}
		pattern := randomBytes(size) // fresh random data, never zeros
		base, err := measureGoCopy(pattern, cfg.repeats(size))
		if err != nil {
			return nil, err
		}
		r.add(cfg, base)
		for _, p := range cfg.Paths {
			for _, dir := range directions(p) {
				res, err := measurePath(c, p, dir, pattern, cfg.repeats(size))
				if err != nil {
					return nil, fmt.Errorf("bench: %v %v %s: %w", p, dir, accounting.FormatBytes(size), err)
				}
				r.add(cfg, res)
			}
		}
	}
	r.ratios()
	return r, nil
}

func (r *Report) add(cfg Config, res Result) {
	r.Results = append(r.Results, res)
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "bench: %-8s %-4s %10s  %8.2f GB/s\n", res.Path, res.Direction, accounting.FormatBytes(res.Size), res.GBps)
	}
}

// directions returns the directions path p moves in.
func directions(p transfer.Path) []accounting.Direction {
	switch p {
	case transfer.PathD2D:
		return []accounting.Direction{accounting.DtoD}
	case transfer.PathPeer:
		return []accounting.Direction{accounting.Peer}
	}
	return []accounting.Direction{accounting.HtoD, accounting.DtoH}
}

// ratios fills in each result's ratios to its peers of the same size.
func (r *Report) ratios() {
	find := func(path, dir string, size int64) *Result {
		for i := range r.Results {
			if q := &r.Results[i]; q.Path == path && q.Direction == dir && q.Size == size {
				return q
			}
		}
		return nil
	}
	ratio := func(a, b float64) *float64 {
		if b <= 0 {
			return nil
		}
		v := a / b
		return &v
	}
	for i := range r.Results {
		q := &r.Results[i]
		if q.Path == GoCopy {
			continue
		}
		if p := find("pinned", q.Direction, q.Size); p != nil {
			q.VsPinned = ratio(q.GBps, p.GBps)
		}
		if g := find(GoCopy, "HtoH", q.Size); g != nil {
			q.VsCopy = ratio(q.GBps, g.GBps)
		}
		if q.Direction == "HtoD" || q.Direction == "DtoH" {
			q.VsPCIe = ratio(q.GBps, r.PCIeGBps)
		}
	}
}

// GoCopy names the baseline: Go's copy() between two pageable slices.
const GoCopy = "go-copy"

// measureGoCopy times Go's copy() of size bytes, the sim backend's peer.
func measureGoCopy(src []byte, reps int) (Result, error) {
	size := int64(len(src))
	dst := make([]byte, size)
	copy(dst, src) // warm-up: the pages exist
	times := make([]time.Duration, reps)
	for i := range times {
		start := time.Now()
		copy(dst, src)
		times[i] = time.Since(start)
	}
	if !slices.Equal(dst, src) {
		return Result{}, errors.New("bench: go copy: data differs")
	}
	return summarize(GoCopy, accounting.HtoH, size, times), nil
}

// summarize turns repeat times into a result.
func summarize(path string, dir accounting.Direction, size int64, times []time.Duration) Result {
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	gbps := func(d time.Duration) float64 { return float64(size) / max(d.Seconds(), 1e-9) / 1e9 }
	return Result{
		Path: path, Direction: dir.String(), Size: size, Repeats: len(times),
		MedianSeconds: med.Seconds(), GBps: gbps(med), MinGBps: gbps(sorted[len(sorted)-1]), MaxGBps: gbps(sorted[0]),
	}
}

func randomBytes(n int64) []byte {
	b := make([]byte, n)
	for i := 0; i+8 <= len(b); i += 8 {
		v := rand.Uint64()
		for k := range 8 {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(rand.Uint32())
	}
	return b
}
