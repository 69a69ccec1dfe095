package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
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
	// PCIe is the host link's bandwidth per direction in GB/s: the ratio
	// "vs PCIe" and the ceiling of the host↔device figures. 0: from the
	// device's Info, else its model where known (PCIeFor); see CeilingsFor.
	// Negative is an error.
	PCIe float64
	// Progress, when set, gets a line per measurement.
	Progress io.Writer
	// Bidir adds a bidirectional row per size (Bidir): an HtoD and a DtoH
	// copy along the pinned path at once, on two streams.
	Bidir bool
	// Managed are the managed-memory paths to measure beside Paths (none
	// unless told; ManagedPaths are all of them).
	Managed []ManagedPath
	// Pageable adds the pageable-in-place rows (PageableInPlace), HtoD
	// and DtoH, where the device has pageable memory access; elsewhere
	// the report's Unsupported says why they are missing.
	Pageable bool
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
	// Seconds is the time the ledger recorded for Bytes: each copy's,
	// timed from completed work; for the staged path the whole copies'.
	Seconds float64 `json:"seconds"`
	// Migrated and Prefetched are the managed paths' bytes the driver
	// moved on a page fault (accounting.PathMigrated) and for a prefetch
	// (accounting.PathPrefetch) in the direction measured; Faults and
	// Duplicates the page faults and read-only copies it counted.
	Migrated   int64 `json:"migrated_bytes,omitempty"`
	Prefetched int64 `json:"prefetched_bytes,omitempty"`
	Faults     int64 `json:"faults,omitempty"`
	Duplicates int64 `json:"duplicates,omitempty"`
	// Untimed: Bytes are the driver's own page moves, which no copy call
	// timed (Seconds is 0): on a GPU the driver overlaps them with the
	// kernel or host access that asked for them; sim moves no bytes for
	// them at all, the device's memory being the host's. The row's time is
	// the wall-clock one only.
	Untimed bool `json:"untimed,omitempty"`
}

// GBps returns the ledger's figure: Bytes over Seconds, in GB/s; +Inf for
// bytes recorded in no time, 0 for no bytes or Untimed ones.
func (c *Counts) GBps() float64 {
	if c.Bytes == 0 || c.Untimed {
		return 0
	}
	if c.Seconds <= 0 {
		return math.Inf(1)
	}
	return float64(c.Bytes) / c.Seconds / 1e9
}

// Result is one measurement: a path, a direction and a size.
type Result struct {
	Path          string  `json:"path"`
	Direction     string  `json:"direction"`
	Size          int64   `json:"bytes"`
	Repeats       int     `json:"repeats"`
	MedianSeconds float64 `json:"median_s"`
	GBps          float64 `json:"GB_per_s"` // median, 10^9 bytes per second
	MinGBps       float64 `json:"min_GB_per_s"`
	MaxGBps       float64 `json:"max_GB_per_s"`
	// EventMedianSeconds and EventGBps are the median repeat timed on the
	// device, between two events recorded on the copy's stream around it:
	// the copy without the cost of queueing it and waiting for it. Zero
	// where no pair of events brackets the copy (the staged path, Go's copy).
	EventMedianSeconds float64 `json:"event_median_s,omitempty"`
	EventGBps          float64 `json:"event_GB_per_s,omitempty"`
	// LatencyMicros is a copy of at most LatencyMaxBytes's time in µs: the
	// event-timed median where there is one, else the wall-clock median.
	LatencyMicros *float64 `json:"latency_us,omitempty"`
	// VsOneWay is the bidirectional row's GBps (both directions together)
	// over the sum of the pinned path's HtoD and DtoH figures of the same
	// size: 1 when both copy engines move at full speed at once.
	VsOneWay *float64 `json:"ratio_to_one_way_sum,omitempty"`
	VsPinned *float64 `json:"ratio_to_pinned,omitempty"`  // GBps / the pinned path's, same direction and size
	VsCopy   *float64 `json:"ratio_to_go_copy,omitempty"` // GBps / Go's copy() of the same size
	VsPCIe   *float64 `json:"ratio_to_pcie,omitempty"`    // GBps / the link's bandwidth
	// VsMemcpy is a staged copy's GBps over the host's memcpy ceiling
	// (Report.MemcpyCeiling), which it cannot beat.
	VsMemcpy *float64 `json:"ratio_to_memcpy_ceiling,omitempty"`
	// Planner, on the row of the path the planner picks for this size,
	// direction and kind of host memory, says so and how far it is from
	// the best path measured (Report.Plans).
	Planner string  `json:"planner,omitempty"`
	Ledger  *Counts `json:"ledger,omitempty"`
	// Ceiling is the most the figures of this path can physically be; nil
	// for the go-copy reference.
	Ceiling *Ceiling `json:"ceiling,omitempty"`
	// Impossible, when not empty, names the figures (median, fastest
	// repeat, the ledger's) more than Tolerance above Ceiling, and the
	// ceiling: the figures cannot be true.
	Impossible string `json:"impossible,omitempty"`
}

// LedgerOK reports what the table's ledger column says: the ledger
// counted exactly the bytes requested, and no figure is impossible.
func (q *Result) LedgerOK() bool {
	return q.Ledger != nil && q.Ledger.OK && q.Impossible == ""
}

// Report is a whole bench run.
type Report struct {
	Device   string    `json:"device"`
	Model    string    `json:"model"`
	Driver   string    `json:"driver,omitempty"`
	Date     time.Time `json:"date"`
	PCIeGBps float64   `json:"pcie_GB_per_s,omitempty"`
	// HostCopy is the host's memory copy curve, measured at the start of
	// the run, from cache-resident sizes to one well above the last-level
	// cache: the sim backend's ceilings follow it (CeilingsFor).
	// HostCopyGBps is its fastest rate.
	HostCopy     []MemoryCopy `json:"host_copy"`
	HostCopyGBps float64      `json:"host_copy_GB_per_s"`
	Ceilings     Ceilings     `json:"ceilings"`
	Tolerance    float64      `json:"ceiling_tolerance"` // a figure more than this fraction above its ceiling is refused
	// HostMemcpy is the host's copy from pageable into pinned memory of
	// MemcpyBytes on 1, 2, 4, … GOMAXPROCS goroutines (MemcpyCeiling),
	// and MemcpyCeiling the fastest of them: what a staged copy can reach.
	HostMemcpy    []transfer.HostCopy `json:"host_memcpy"`
	MemcpyBytes   int64               `json:"host_memcpy_bytes"`
	MemcpyCeiling transfer.HostCopy   `json:"memcpy_ceiling"`
	// Profile names the planner's cost model; ProfileNotice says why a
	// saved profile was not used, if one was not.
	Profile       string             `json:"profile"`
	ProfileNotice string             `json:"profile_notice,omitempty"`
	Ring          transfer.RingShape `json:"staged_ring"` // the staging ring measured
	Results       []Result           `json:"results"`
	// Unsupported are the rows asked for that this device cannot run, each
	// with why ("managed-prefetch HtoD: not supported on this device: ...").
	Unsupported []string `json:"unsupported,omitempty"`
	// Plans are the planner's picks beside the paths measured.
	Plans []Plan `json:"planner"`
}

// Plan is the planner's pick for one size, direction and kind of host
// memory, beside the fastest of the paths it chooses from, as measured.
type Plan struct {
	Size      int64   `json:"bytes"`
	Direction string  `json:"direction"`
	Host      string  `json:"host"` // "pageable", "pinned" or "mapped pinned"
	Pick      string  `json:"pick"`
	Reason    string  `json:"reason"`
	PickGBps  float64 `json:"pick_GB_per_s"`
	Best      string  `json:"best"` // the fastest path measured of those the planner chooses from
	BestGBps  float64 `json:"best_GB_per_s"`
	// Slower is how much longer the pick takes than the best path: the
	// best's GB/s over the pick's, less 1 (0 when the pick is the best).
	Slower float64 `json:"slower_than_best"`
}

// Run measures every path, direction and size of cfg on dev. It checks
// each copy's data once, after the timed repeats, and every figure against
// its physical ceiling (CeilingsFor, Report.Check). A run with a figure
// above its ceiling returns the report, its impossible figures marked, and
// an *ImpossibleError naming each figure and its ceiling; any other error
// returns no report.
func Run(dev driver.Device, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.PCIe < 0 || math.IsNaN(cfg.PCIe) || math.IsInf(cfg.PCIe, 0) {
		return nil, fmt.Errorf("bench: PCIe bandwidth %v GB/s: want a positive figure, or 0 for the device's: %w", cfg.PCIe, driver.ErrInvalidValue)
	}
	info := dev.Info()
	r := &Report{Device: info.Name, Model: info.Model, Driver: info.Driver, Date: time.Now().UTC(), PCIeGBps: cfg.PCIe, Tolerance: Tolerance}
	if r.PCIeGBps == 0 && info.HostLinkBandwidth > 0 {
		r.PCIeGBps = info.HostLinkBandwidth / 1e9
	}
	if r.PCIeGBps == 0 {
		r.PCIeGBps = PCIeFor(info.Model)
	}
	var err error
	if r.HostCopy, err = measureHostCopy(info.Backend == "sim"); err != nil {
		return nil, err
	}
	r.HostCopyGBps = peakCopy(r.HostCopy)
	r.Ceilings = CeilingsFor(info, cfg.PCIe, r.HostCopy)
	if slices.Contains(cfg.Paths, transfer.PathStaged) {
		r.MemcpyBytes = min(max(slices.Max(cfg.Sizes), 1<<20), 64<<20)
		if r.HostMemcpy, err = MemcpyCeiling(dev, r.MemcpyBytes, ThreadCounts(), cfg.MinRepeats); err != nil {
			return nil, err
		}
		r.MemcpyCeiling = ceilingOf(r.HostMemcpy)
	}
	c, err := transfer.New(dev, cfg.Copier...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	prof, notice := c.Profile()
	r.Profile, r.Ring = prof.Name(), c.Ring()
	if notice != nil {
		r.ProfileNotice = notice.Error()
	}
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
		releaseHostMemory(size)
		for _, p := range cfg.Paths {
			for _, dir := range directions(p) {
				res, err := measurePath(c, p, dir, pattern, cfg.repeats(size), true)
				if err != nil {
					return nil, fmt.Errorf("bench: %v %v %s: %w", p, dir, accounting.FormatBytes(size), err)
				}
				r.add(cfg, res)
				releaseHostMemory(size)
			}
		}
		if len(cfg.Managed) > 0 {
			if err := r.measureManaged(dev, cfg, pattern); err != nil {
				return nil, fmt.Errorf("bench: %s: %w", accounting.FormatBytes(size), err)
			}
		}
		if cfg.Pageable {
			if err := r.measurePageable(dev, cfg, pattern); err != nil {
				return nil, fmt.Errorf("bench: %s: %w", accounting.FormatBytes(size), err)
			}
		}
		if cfg.Bidir {
			res, err := measureBidir(c, pattern, cfg.repeats(size))
			if err != nil {
				return nil, fmt.Errorf("bench: %s %s: %w", Bidir, accounting.FormatBytes(size), err)
			}
			r.add(cfg, res)
		}
	}
	r.ratios()
	if err := r.plan(c, info.CanMapHost); err != nil {
		return nil, err
	}
	if err := r.Check(); err != nil {
		return r, err
	}
	return r, nil
}

func (r *Report) add(cfg Config, res Result) {
	res.check(r.Ceilings)
	r.Results = append(r.Results, res)
	if cfg.Progress != nil {
		mark := ""
		if res.Impossible != "" {
			mark = fmt.Sprintf("  IMPOSSIBLE: above %v", *res.Ceiling)
		}
		event := ""
		if res.EventGBps > 0 {
			event = fmt.Sprintf(" (events %.2f)", res.EventGBps)
		}
		fmt.Fprintf(cfg.Progress, "bench: %-8s %-4s %10s  %8.2f GB/s%s%s\n", res.Path, res.Direction, accounting.FormatBytes(res.Size), res.GBps, event, mark)
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

// Find returns the result of the given path, direction and size, nil if
// the run has none.
func (r *Report) Find(path, dir string, size int64) *Result {
	for i := range r.Results {
		if q := &r.Results[i]; q.Path == path && q.Direction == dir && q.Size == size {
			return q
		}
	}
	return nil
}

// ratios fills in each result's ratios to its peers of the same size.
func (r *Report) ratios() {
	find := r.Find
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
		if q.Path == Bidir {
			up, down := find("pinned", "HtoD", q.Size), find("pinned", "DtoH", q.Size)
			if up != nil && down != nil {
				q.VsOneWay = ratio(q.GBps, up.GBps+down.GBps)
			}
		}
		if q.Path == transfer.PathStaged.String() {
			q.VsMemcpy = ratio(q.GBps, r.MemcpyCeiling.GBps)
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

// releaseHostMemory gives the host memory of a measurement of size bytes
// back to the system before the next one, when size is large: each
// measurement makes Go slices of its size, which the collector would
// otherwise keep until the heap doubled (on sim, where device memory is
// host memory too, a bench up to 1 GiB held 8.4 GB at its peak without it).
func releaseHostMemory(size int64) {
	if size >= 64<<20 {
		debug.FreeOSMemory()
	}
}
