//go:build mpi

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

// summary is rank 0's report of the job: its last line of output.
type summary struct {
	Ranks             int           `json:"ranks"`
	Geometry          tomo.Geometry `json:"geometry"`
	Compared          bool          `json:"compared"`
	SameAsOneProcess  bool          `json:"same_as_one_process"`
	DifferingValues   int           `json:"differing_values"`
	MaxAbsDiff        float64       `json:"max_abs_diff"`
	OneProcessSeconds float64       `json:"one_process_seconds"`
	Path              string        `json:"mpi_path"`
	CUDAAware         bool          `json:"cuda_aware"`
	ChunkBytes        int64         `json:"chunk_bytes"`
	DerivedDatatypes  bool          `json:"derived_datatypes"`
	Volume            string        `json:"volume"`
	Seconds           float64       `json:"seconds"`
	Checks            checks        `json:"checks"`
	Ledger            jobLedger     `json:"ledger"`
}

// checks are what the ledger report proves of the job.
type checks struct {
	// BytesAddUp: for every direction and path, the ranks' bytes sum to the total's.
	BytesAddUp bool `json:"bytes_add_up"`
	// OnlyInputOutput: on every rank, apart from the reslice's staging
	// copies (none on mpi-device), the bytes host to device are its
	// projections and those device to host its slab of the volume.
	OnlyInputOutput bool `json:"host_device_only_input_output"`
	// StagingMatchesNet: on every rank the reslice's host↔device bytes
	// are the Alltoallv's own buffers on mpi-staged, and 0 on mpi-device.
	StagingMatchesNet bool `json:"staging_matches_path"`
}

// jobLedger is every rank's ledger and their total.
type jobLedger struct {
	Ranks []ledgerEntry `json:"ranks"`
	Total ledgerEntry   `json:"total"`
}

// ledgerEntry is one rank's ledger of its part of the job, or the total.
type ledgerEntry struct {
	Rank        *int                                       `json:"rank,omitempty"`
	Device      string                                     `json:"device,omitempty"`
	Slices      []int                                      `json:"slices,omitempty"` // [start, end)
	Angles      []int                                      `json:"angles,omitempty"` // [start, end)
	Chunks      int                                        `json:"chunks"`
	InputBytes  int64                                      `json:"input_bytes"`
	OutputBytes int64                                      `json:"output_bytes"`
	HostDevice  hostDevice                                 `json:"host_device"`
	Memory      map[string]memStats                        `json:"memory"`
	Copies      map[string]map[string]accounting.CopyStats `json:"copies"`
	Seconds     timeSplit                                  `json:"seconds"`
}

// hostDevice is the bytes across host↔device, and of them the reslice's.
type hostDevice struct {
	HtoD        int64 `json:"htod_bytes"`
	DtoH        int64 `json:"dtoh_bytes"`
	ResliceHtoD int64 `json:"reslice_htod_bytes"`
	ResliceDtoH int64 `json:"reslice_dtoh_bytes"`
}

// memStats is one memory kind's use.
type memStats struct {
	Allocated int64 `json:"allocated_bytes"`
	Peak      int64 `json:"peak_bytes"`
	Allocs    int64 `json:"allocations"`
	Current   int64 `json:"current_bytes"`
}

// timeSplit is where a rank's time went: in kernels (the filter and
// backprojection), in copies (every host↔device and device-to-device copy,
// packs and reslices included, from the ledger), in MPI calls (the ledger's
// net direction), and the wall time of its part.
type timeSplit struct {
	Kernels float64 `json:"kernels"`
	Copies  float64 `json:"copies"`
	MPI     float64 `json:"mpi"`
	Wall    float64 `json:"wall"`
}

func entryOf(s accounting.Snapshot, reslice accounting.Snapshot) ledgerEntry {
	e := ledgerEntry{Memory: map[string]memStats{}, Copies: map[string]map[string]accounting.CopyStats{}}
	for k := range accounting.NumKinds {
		st := s.Kinds[k]
		if st.Allocs == 0 && st.Current == 0 {
			continue
		}
		e.Memory[k.String()] = memStats{Allocated: st.Allocated, Peak: st.Peak, Allocs: st.Allocs, Current: st.Current}
	}
	for d := range accounting.NumDirections {
		for p := range accounting.NumPaths {
			c := s.Copies[d][p]
			if c.Count == 0 {
				continue
			}
			if e.Copies[d.String()] == nil {
				e.Copies[d.String()] = map[string]accounting.CopyStats{}
			}
			e.Copies[d.String()][p.String()] = c
			if d == accounting.Net {
				e.Seconds.MPI += c.Seconds
			} else {
				e.Seconds.Copies += c.Seconds
			}
		}
	}
	e.HostDevice = hostDevice{HtoD: s.CopyTotal(accounting.HtoD).Bytes, DtoH: s.CopyTotal(accounting.DtoH).Bytes,
		ResliceHtoD: reslice.CopyTotal(accounting.HtoD).Bytes, ResliceDtoH: reslice.CopyTotal(accounting.DtoH).Bytes}
	return e
}

// newSummary reduces the ranks' reports to the job's.
func newSummary(c config, reports []rankReport, volume string) *summary {
	s := &summary{Ranks: len(reports), Geometry: c.geom, ChunkBytes: c.chunk, Volume: volume,
		Checks: checks{BytesAddUp: true, OnlyInputOutput: true, StagingMatchesNet: true}}
	var runs, reslices []accounting.Snapshot
	for i, r := range reports {
		e := entryOf(r.Run, r.Reslice)
		e.Rank, e.Device, e.Chunks = &reports[i].Rank, r.Device, r.Chunks
		e.Slices = []int{r.Slices.Start, r.Slices.Start + r.Slices.Len}
		e.Angles = []int{r.Angles.Start, r.Angles.Start + r.Angles.Len}
		e.InputBytes, e.OutputBytes = r.InputBytes, r.OutputBytes
		e.Seconds.Kernels, e.Seconds.Wall = r.KernelSeconds, r.Seconds
		s.Ledger.Ranks = append(s.Ledger.Ranks, e)
		runs, reslices = append(runs, r.Run), append(reslices, r.Reslice)
		s.Path = r.Path
		s.Seconds = max(s.Seconds, r.Seconds)
		h := e.HostDevice
		if h.HtoD-h.ResliceHtoD != r.InputBytes || h.DtoH-h.ResliceDtoH != r.OutputBytes {
			s.Checks.OnlyInputOutput = false
		}
		net := r.Reslice.Copies[accounting.Net]
		switch r.Path {
		case accounting.PathMPIStaged.String():
			// the send buffer out through page-locked memory, the receive buffer back
			send := int64(r.Angles.Len) * int64(c.geom.Slices) * int64(c.geom.Size) * 4
			recv := int64(c.geom.Angles) * int64(r.Slices.Len) * int64(c.geom.Size) * 4
			if h.ResliceDtoH != send || h.ResliceHtoD != recv || net[accounting.PathMPIStaged].Count != 1 {
				s.Checks.StagingMatchesNet = false
			}
		default:
			if h.ResliceDtoH != 0 || h.ResliceHtoD != 0 || net[accounting.PathMPIDevice].Count != 1 {
				s.Checks.StagingMatchesNet = false
			}
		}
	}
	per := int64(c.geom.Size) * 4
	for _, r := range reports { // a block longer than the chunk went as a derived datatype
		for _, q := range reports {
			if int64(r.Angles.Len)*int64(q.Slices.Len)*per > c.chunk {
				s.DerivedDatatypes = true
			}
		}
	}
	total := accounting.Sum("job", runs...)
	s.Ledger.Total = entryOf(total, accounting.Sum("reslice", reslices...))
	for _, e := range s.Ledger.Ranks {
		s.Ledger.Total.InputBytes += e.InputBytes
		s.Ledger.Total.OutputBytes += e.OutputBytes
		s.Ledger.Total.Chunks += e.Chunks
		s.Ledger.Total.Seconds.Kernels += e.Seconds.Kernels
		s.Ledger.Total.Seconds.Wall += e.Seconds.Wall
	}
	s.Checks.BytesAddUp = addsUp(s.Ledger)
	return s
}

// addsUp reports whether, in every direction and path, the ranks' counts
// and bytes sum to the total's.
func addsUp(l jobLedger) bool {
	sums := map[string]accounting.CopyStats{}
	for _, e := range l.Ranks {
		for d, ps := range e.Copies {
			for p, c := range ps {
				k := d + "/" + p
				sums[k] = accounting.CopyStats{Count: sums[k].Count + c.Count, Bytes: sums[k].Bytes + c.Bytes}
			}
		}
	}
	n := 0
	for d, ps := range l.Total.Copies {
		for p, c := range ps {
			n++
			if s := sums[d+"/"+p]; s.Count != c.Count || s.Bytes != c.Bytes {
				return false
			}
		}
	}
	return n == len(sums)
}

// compare reconstructs the sinograms in one process on dev (tomo.Reconstruct,
// as the fbp example does) and compares its volume with the job's file bit for bit.
func (s *summary) compare(dev driver.Device, g tomo.Geometry, sinograms []float32, volume string) error {
	start := time.Now()
	ref, err := tomo.ReconstructWith(dev, g, sinograms, tomo.Resident, tomo.Options{})
	if err != nil {
		return fmt.Errorf("one-process run: %w", err)
	}
	s.OneProcessSeconds = time.Since(start).Seconds()
	b, err := os.ReadFile(volume)
	if err != nil {
		return err
	}
	got := bytesFloats(b)
	s.Compared = true
	if len(got) != len(ref.Volume) {
		s.DifferingValues = max(len(got), len(ref.Volume))
		return nil
	}
	for i, v := range got {
		if math.Float32bits(v) != math.Float32bits(ref.Volume[i]) {
			s.DifferingValues++
			s.MaxAbsDiff = max(s.MaxAbsDiff, math.Abs(float64(v)-float64(ref.Volume[i])))
		}
	}
	s.SameAsOneProcess = s.DifferingValues == 0
	return nil
}

// write prints the summary: as text, or as one line of JSON.
func (s *summary) write(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fbpmpi: %d ranks, %v, reslice on %s (CUDA-aware MPI: %v)\n", s.Ranks, s.Geometry, s.Path, s.CUDAAware)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rank\tdevice\tslices\tangles\tchunks\tHtoD\tDtoH\treslice HtoD\treslice DtoH\tnet\tkernels\tcopies\tMPI\twall\t")
	row := func(name string, e ledgerEntry) {
		rng := func(r []int) string {
			if r == nil {
				return "-"
			}
			return fmt.Sprintf("[%d,%d)", r[0], r[1])
		}
		var net int64
		for _, c := range e.Copies[accounting.Net.String()] {
			net += c.Bytes
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.3f s\t%.3f s\t%.3f s\t%.3f s\t\n", name, e.Device, rng(e.Slices), rng(e.Angles), e.Chunks,
			accounting.FormatBytes(e.HostDevice.HtoD), accounting.FormatBytes(e.HostDevice.DtoH),
			accounting.FormatBytes(e.HostDevice.ResliceHtoD), accounting.FormatBytes(e.HostDevice.ResliceDtoH), accounting.FormatBytes(net),
			e.Seconds.Kernels, e.Seconds.Copies, e.Seconds.MPI, e.Seconds.Wall)
	}
	for _, e := range s.Ledger.Ranks {
		row(fmt.Sprint(*e.Rank), e)
	}
	row("total", s.Ledger.Total)
	tw.Flush()
	fmt.Fprintf(&b, "bytes add up: %v; host↔device only input and output (beside the reslice's staging): %v; staging matches the path: %v\n",
		s.Checks.BytesAddUp, s.Checks.OnlyInputOutput, s.Checks.StagingMatchesNet)
	if s.Compared {
		fmt.Fprintf(&b, "same as one process: %v (%d values differ; one process took %.3f s, the job %.3f s)\n",
			s.SameAsOneProcess, s.DifferingValues, s.OneProcessSeconds, s.Seconds)
	}
	fmt.Fprintf(&b, "volume: %s\n", s.Volume)
	_, err := io.WriteString(w, b.String())
	return err
}
