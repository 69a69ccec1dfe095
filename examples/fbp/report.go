package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

// runReport is one reconstruction, as -json prints it.
type runReport struct {
	Mode tomo.Mode `json:"mode"`
	// Memory is where a resident run kept the sinograms and the volume:
	// device or managed (its ledger then has the managed figures).
	Memory  tomo.Memory `json:"memory"`
	RMSE    float64     `json:"rmse"` // relative to the phantom
	Slices  int         `json:"slices"`
	Chunks  int         `json:"chunks"`
	Seconds float64     `json:"seconds"`
	// Streams is the chunks in flight at once (1: one after the other).
	Streams int `json:"streams"`
	// KernelSeconds is the time the run's kernels ran, from events (a
	// pipelined run only; 0 otherwise), and SecondsOverKernels the run's
	// time over it: the resident end-to-end goal is at most 1.2 on a GPU.
	KernelSeconds      float64      `json:"kernel_seconds,omitempty"`
	SecondsOverKernels float64      `json:"seconds_over_kernel_seconds,omitempty"`
	Ledger             tomo.Traffic `json:"ledger"`
	Plan               string       `json:"plan"`
	Degraded           bool         `json:"degraded,omitempty"`
	result             *tomo.Result
}

// label is the run's mode, and for a run in managed memory, that:
// "resident, managed".
func (r runReport) label() string {
	if r.Memory == tomo.ManagedMemory {
		return string(r.Mode) + ", managed"
	}
	return string(r.Mode)
}

func newRun(res *tomo.Result, scan *tomo.Scan) (runReport, error) {
	rmse, err := tomo.RelativeRMSE(res.Volume, scan.Phantom)
	if err != nil {
		return runReport{}, err
	}
	r := runReport{Mode: res.Mode, Memory: res.Memory, RMSE: rmse, Slices: res.Geometry.Slices, Chunks: len(res.Plan.Chunks),
		Seconds: res.Seconds, Streams: res.Streams, KernelSeconds: res.KernelSeconds,
		Ledger: res.Traffic, Plan: res.Plan.Explain(), Degraded: res.Degraded, result: res}
	if res.KernelSeconds > 0 {
		r.SecondsOverKernels = res.Seconds / res.KernelSeconds
	}
	return r, nil
}

// comparison is staged against resident, as ratios, and whether the two
// volumes are the same.
type comparison struct {
	TimeRatio    float64 `json:"staged_over_resident_time"`
	BytesRatio   float64 `json:"staged_over_resident_host_device_bytes"`
	PeakRatio    float64 `json:"staged_over_resident_device_peak"`
	MaxAbsDiff   float64 `json:"max_abs_difference"`
	SameVolume   bool    `json:"same_volume"`
	ExtraBytes   int64   `json:"staged_extra_host_device_bytes"`
	ExtraSeconds float64 `json:"staged_extra_seconds"`
}

func compare(resident, staged runReport) *comparison {
	var diff float64
	for i, v := range resident.result.Volume {
		diff = math.Max(diff, math.Abs(float64(v)-float64(staged.result.Volume[i])))
	}
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	return &comparison{
		TimeRatio:    ratio(staged.Seconds, resident.Seconds),
		BytesRatio:   ratio(float64(staged.Ledger.Crossed()), float64(resident.Ledger.Crossed())),
		PeakRatio:    ratio(float64(staged.Ledger.DevicePeak), float64(resident.Ledger.DevicePeak)),
		MaxAbsDiff:   diff,
		SameVolume:   diff == 0,
		ExtraBytes:   staged.Ledger.Crossed() - resident.Ledger.Crossed(),
		ExtraSeconds: staged.Seconds - resident.Seconds,
	}
}

// report is everything the command prints.
type report struct {
	Device     string        `json:"device"`
	Geometry   tomo.Geometry `json:"geometry"`
	Acquire    *tomo.Scan    `json:"acquire"`
	Runs       []runReport   `json:"runs"`
	Comparison *comparison   `json:"comparison,omitempty"`
	PNG        string        `json:"png,omitempty"`
	Summary    bool          `json:"-"` // -summary: end the text with three lines for make run
}

func (r report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// text is the report as a table.
func (r report) text() string {
	var b strings.Builder
	f := accounting.FormatBytes
	fmt.Fprintf(&b, "fbp on %s: %v\n", r.Device, r.Geometry)
	fmt.Fprintf(&b, "scan: phantom and sinograms made on the device in %s, %.2f s, %s down\n",
		count(len(r.Acquire.Plan.Chunks), "chunk"), r.Acquire.Seconds, f(r.Acquire.Traffic.DtoH))
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "%s\n", planLine(run.label(), run.Plan)) // each mode plans its own chunks
	}
	fmt.Fprintf(&b, "\n%-9s %8s %12s %12s %13s %12s %7s %7s\n", "mode", "seconds", "host→device", "device→host", "host↔device", "device peak", "chunks", "rmse")
	for _, run := range r.Runs {
		l := run.Ledger
		fmt.Fprintf(&b, "%-9s %8.3f %12s %12s %13s %12s %7d %7.4f\n", run.Mode, run.Seconds, f(l.HtoD), f(l.DtoH), f(l.Crossed()), f(l.DevicePeak), run.Chunks, run.RMSE)
	}
	if len(r.Runs) > 0 {
		b.WriteString("rmse: the reconstruction's RMS error over the phantom's RMS; lower is better, and it falls as size and angles grow\n" +
			"  (0.134 at 256² with 360 angles, where the tests require at most 0.15; 128² with 180 angles gives about 0.17)\n")
	}
	for _, run := range r.Runs {
		fmt.Fprintf(&b, "%-9s by path: up %v, down %v; %d device allocations\n", run.Mode, paths(run.Ledger.HtoDByPath), paths(run.Ledger.DtoHByPath), run.Ledger.DeviceAllocs)
		if run.KernelSeconds > 0 {
			fmt.Fprintf(&b, "%-9s %s in flight on as many streams; kernels ran %.3f s (events): the run took %.2f× its kernels' time\n",
				run.Mode, count(run.Streams, "chunk"), run.KernelSeconds, run.SecondsOverKernels)
		}
		if m := run.Ledger.Managed; m != nil {
			b.WriteString(managedLines(string(run.Mode), m))
		}
		if run.Degraded {
			fmt.Fprintf(&b, "%-9s the ramp filter ran in several passes: its workspace had no room for one\n", run.Mode)
		}
	}
	if c := r.Comparison; c != nil {
		fmt.Fprintf(&b, "\nstaged / resident: %.2f× the time (%+.3f s), %.2f× the host↔device bytes (+%s), %.2f× the device peak\n",
			c.TimeRatio, c.ExtraSeconds, c.BytesRatio, f(c.ExtraBytes), c.PeakRatio)
		if c.SameVolume {
			b.WriteString("both modes give the same volume, bit for bit\n")
		} else {
			fmt.Fprintf(&b, "the two volumes DIFFER: max |difference| %g\n", c.MaxAbsDiff)
		}
	}
	if r.PNG != "" {
		fmt.Fprintf(&b, "middle slice (phantom | %s reconstruction | difference): %s\n", r.Runs[0].Mode, r.PNG)
	}
	if r.Summary {
		b.WriteString(r.summary())
	}
	return b.String()
}

// summary is what make run ends with: three lines that say what was
// shown, the headline ratio and where to read on.
func (r report) summary() string {
	f := accounting.FormatBytes
	var b strings.Builder
	shown := "summary: shown: transfer paths, bytes checked (above); FBP on " + r.Device
	if c := r.Comparison; c != nil && len(r.Runs) == 2 {
		res, st := r.Runs[0], r.Runs[1]
		same := "the same volume, bit for bit"
		if !c.SameVolume {
			same = fmt.Sprintf("volumes that DIFFER by up to %g", c.MaxAbsDiff)
		}
		fmt.Fprintf(&b, "\n%s, resident and staged: %s\n", shown, same)
		fmt.Fprintf(&b, "summary: headline: staged: %.2f× the host↔device bytes (%s vs %s), %.2f× the time%s\n",
			c.BytesRatio, f(st.Ledger.Crossed()), f(res.Ledger.Crossed()), c.TimeRatio, simNote(r.Device))
	} else {
		fmt.Fprintf(&b, "\n%s, %s mode\n", shown, r.Runs[0].Mode)
		b.WriteString("summary: headline: -mode both compares resident and staged\n")
	}
	b.WriteString("summary: next: docs/guide.md (the API), docs/perf.md (each figure, its command), docs/gpu-results.md (GPU runs)\n")
	return b.String()
}

// simNote says why times on sim say little.
func simNote(dev string) string {
	if strings.HasPrefix(dev, "sim") {
		return " (sim: read the bytes)"
	}
	return ""
}

// managedLines are a run in managed memory's figures from the ledger:
// what it allocated, the bytes the driver moved per path and direction,
// and the page events.
func managedLines(mode string, m *tomo.ManagedTraffic) string {
	f := accounting.FormatBytes
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s in managed memory: %s, the sinograms and the volume (its device peak: the workspaces alone)\n", mode, f(m.Bytes))
	fmt.Fprintf(&b, "%-9s managed pages moved: prefetched up %s, down %s; migrated up %s, down %s\n",
		mode, f(m.PrefetchHtoD), f(m.PrefetchDtoH), f(m.MigratedHtoD), f(m.MigratedDtoH))
	fmt.Fprintf(&b, "%-9s managed pages: %s, %s, %s\n", mode, count64(m.Faults, "page fault"), count64(m.Evictions, "eviction"), count64(m.Duplicates, "read duplicate"))
	if m.Uncounted != "" {
		fmt.Fprintf(&b, "%-9s managed memory migrations not counted: %s\n", mode, m.Uncounted)
	}
	return b.String()
}

// paths is "direct 1.00 MiB" for the bytes per path.
func paths(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for p := range accounting.NumPaths { // in the ledger's order
		name := accounting.Path(p).String()
		if n, ok := m[name]; ok {
			parts = append(parts, name+" "+accounting.FormatBytes(n))
		}
	}
	return strings.Join(parts, ", ")
}

// planLine is "plan, mode: " and the plan, its reasoning in parentheses
// on a second, indented line where the whole would pass 120 columns.
func planLine(mode, p string) string {
	line := fmt.Sprintf("plan, %s: %s", mode, p)
	i := strings.LastIndex(line, " (")
	if utf8.RuneCountInString(line) <= 120 || i < 0 {
		return line
	}
	return line[:i] + "\n " + line[i:]
}

// count writes n things: "1 chunk", "3 chunks".
func count(n int, thing string) string { return count64(int64(n), thing) }

// count64 is count of an int64.
func count64(n int64, thing string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, thing)
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
