//go:build mpi

package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/examples/fbp/tomo"
	"github.com/cuarray/cuarray/mpi"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// rankReport is what a rank tells rank 0 of its part of the job.
type rankReport struct {
	Rank          int
	Device        string
	Slices        plan.Chunk // the slices it reconstructed
	Angles        plan.Chunk // the projections it read
	InputBytes    int64      // its projections, uploaded once
	OutputBytes   int64      // its slab of the volume, downloaded once
	Run           accounting.Snapshot
	Reslice       accounting.Snapshot // the Alltoallv alone (its staging copies, if staged)
	KernelSeconds float64
	Seconds       float64
	Chunks        int // the planner's chunks on its device
	Path          string
}

// job runs this rank's part: it returns rank 0's summary (nil elsewhere).
func job(c config, world mpi.Comm, stderr io.Writer) (*summary, error) {
	rank, ranks := world.Rank(), world.Size()
	local, _, err := world.LocalRank()
	if err != nil {
		return nil, err
	}
	spec := c.device
	if spec == "" {
		spec = "sim:0"
		if n := gpus(); n > 0 {
			spec = fmt.Sprintf("cuda:%d", local%n)
		}
	}
	dev, err := device.Open(spec)
	if errors.Is(err, device.ErrBadSpec) {
		return nil, usageError{err.Error()}
	}
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	if c.mem > 0 {
		if err := dev.Ledger().SetLimit(accounting.Device, c.mem); err != nil {
			return nil, usageError{err.Error()}
		}
	}
	var progress tomo.Progress
	if rank == 0 && !c.quiet {
		progress = func(stage string, done, total int) {
			fmt.Fprintf(stderr, "fbpmpi: rank 0: %-8s %d/%d slices\n", stage, done, total)
		}
	}
	g := c.geom
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	in := c.in
	var sinograms []float32 // all of them, on rank 0, for the one-process run
	if in == "" {
		in = filepath.Join(c.dir, "projections.f32")
		if rank == 0 {
			scan, err := tomo.Acquire(dev, g, progress)
			if err != nil {
				return nil, err
			}
			proj, err := tomo.Projections(g, scan.Sinograms)
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(in, floatBytes(proj), 0o644); err != nil {
				return nil, err
			}
			sinograms = scan.Sinograms
		}
		if err := world.Barrier(); err != nil {
			return nil, err
		}
	}
	angles, err := tomo.Shares(g.Angles, ranks)
	if err != nil {
		return nil, err
	}
	slices, err := tomo.Shares(g.Slices, ranks)
	if err != nil {
		return nil, err
	}
	mine, err := readProjections(world, in, g, angles[rank])
	if err != nil {
		return nil, err
	}
	if rank == 0 && c.compare && sinograms == nil {
		b, err := os.ReadFile(in)
		if err != nil {
			return nil, err
		}
		if sinograms, err = tomo.SinogramsOf(g, bytesFloats(b)); err != nil {
			return nil, err
		}
	}
	if rank == c.faultRank {
		fd, ok := dev.(interface{ FailFault(n int64) })
		if !ok {
			return nil, fmt.Errorf("fault-rank: device %s cannot inject a fault (a sim device can): %w", dev.Info().Name, driver.ErrInvalidValue)
		}
		fd.FailFault(c.faultAfter)
	}
	tr, err := mpi.NewTransport(world, dev)
	if err != nil {
		return nil, err
	}
	rep := rankReport{Rank: rank, Device: dev.Info().Name, Slices: slices[rank], Angles: angles[rank], Path: tr.Path().String(),
		InputBytes: int64(len(mine)) * 4, OutputBytes: int64(slices[rank].Len) * g.SliceBytes()}
	start := time.Now()
	var volume []float32
	rep.Run, err = dev.Ledger().Measure(fmt.Sprintf("fbpmpi rank %d", rank), func() error {
		res, err := reconstruct(dev, tr, g, mine, angles, slices, rank, &rep, progress)
		if err != nil {
			return err
		}
		rep.KernelSeconds, rep.Chunks, volume = res.KernelSeconds, len(res.Plan.Chunks), res.Volume
		return nil
	})
	rep.Seconds = time.Since(start).Seconds()
	err = errors.Join(err, tr.Close())
	if err != nil {
		return nil, err
	}
	out := filepath.Join(c.dir, "volume.f32")
	if err := writeVolume(world, out, g, slices[rank], volume); err != nil {
		return nil, err
	}
	if leaked := dev.Ledger().Current(accounting.Device); leaked != 0 {
		return nil, fmt.Errorf("%s of device memory still allocated after the run", accounting.FormatBytes(leaked))
	}
	reports, err := mpi.GatherValues(world, rep, 0)
	if err != nil || rank != 0 {
		return nil, err
	}
	sum := newSummary(c, reports, out)
	sum.CUDAAware = mpi.CUDAAware()
	if c.compare {
		if err := sum.compare(dev, g, sinograms, out); err != nil {
			return nil, err
		}
	}
	return sum, nil
}

// readProjections reads the projections of angles ch, every slice, from
// file in with MPI-IO (every rank its own, collectively), and checks that
// they are numbers. A file of the wrong size is a jobError (every rank
// sees it).
func readProjections(world mpi.Comm, in string, g tomo.Geometry, ch plan.Chunk) ([]float32, error) {
	f, err := mpi.Open(world, in)
	if err != nil {
		return nil, jobError{fmt.Errorf("input: %w", err)}
	}
	size, err := f.Size()
	if err == nil && size != g.SinogramBytes() {
		err = jobError{fmt.Errorf("input %s: %d bytes, want %d: (%d angles, %d slices, %d bins) of float32",
			in, size, g.SinogramBytes(), g.Angles, g.Slices, g.Size)}
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	per := g.Slices * g.Detectors()
	mine := make([]float32, ch.Len*per)
	err = f.ReadAtAll(int64(ch.Start)*int64(per)*4, floatBytes(mine))
	if err = errors.Join(err, f.Close()); err != nil {
		return nil, fmt.Errorf("input %s: %w", in, err)
	}
	for i, v := range mine {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			a, rest := i/per, i%per
			return nil, fmt.Errorf("input %s: projection %d, slice %d, bin %d is %v: %w",
				in, ch.Start+a, rest/g.Detectors(), rest%g.Detectors(), v, devarray.ErrShape)
		}
	}
	return mine, nil
}

// reconstruct is the distributed part on one rank: upload its
// projections, pack the block for each rank, Alltoallv, reslice what it
// received to sinograms, reconstruct them on the device.
func reconstruct(dev driver.Device, tr *mpi.Transport, g tomo.Geometry, mine []float32, angles, slices []plan.Chunk,
	rank int, rep *rankReport, progress tomo.Progress) (*tomo.Result, error) {
	c, err := transfer.New(dev)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	d, a := g.Detectors(), angles[rank].Len
	var arrays []*devarray.DevArray
	alloc := func(shape ...int) (*devarray.DevArray, error) {
		x, err := devarray.Empty(dev, tomo.DType, shape...)
		if err == nil {
			arrays = append(arrays, x)
		}
		return x, err
	}
	defer func() { // on failure; Free is idempotent
		for _, x := range arrays {
			x.Free()
		}
	}()
	proj, err := alloc(a, g.Slices, d)
	if err != nil {
		return nil, err
	}
	if err := c.Copy(transfer.Dev(proj), transfer.Host(mine, a, g.Slices, d)); err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	send, err := alloc(a * g.Slices * d)
	if err != nil {
		return nil, err
	}
	sendCounts, recvCounts := make([]int64, len(slices)), make([]int64, len(slices))
	off := 0
	for q, s := range slices {
		n := a * s.Len * d
		block, err := proj.Slice(1, s.Start, s.Start+s.Len)
		if err != nil {
			return nil, err
		}
		dst, err := send.Slice(0, off, off+n)
		if err != nil {
			return nil, err
		}
		if dst, err = dst.Reshape(a, s.Len, d); err != nil {
			return nil, err
		}
		if err := c.Copy(transfer.Dev(dst), transfer.Dev(block)); err != nil {
			return nil, fmt.Errorf("pack for rank %d: %w", q, err)
		}
		sendCounts[q] = int64(n)
		recvCounts[q] = int64(angles[q].Len * slices[rank].Len * d)
		off += n
	}
	// each buffer is freed as soon as it is done with, so that the device holds at most
	// two copies of this rank's share at once (projections and send buffer, send and
	// receive buffers, receive buffer and sinograms)
	if err := proj.Free(); err != nil {
		return nil, err
	}
	mySlices := slices[rank].Len
	recv, err := alloc(g.Angles * mySlices * d)
	if err != nil {
		return nil, err
	}
	rep.Reslice, err = dev.Ledger().Measure("reslice", func() error {
		return tr.Alltoallv(send, sendCounts, recv, recvCounts)
	})
	if err != nil {
		return nil, fmt.Errorf("reslice: %w", err)
	}
	if err := send.Free(); err != nil {
		return nil, err
	}
	sino, err := alloc(mySlices, g.Angles, d)
	if err != nil {
		return nil, err
	}
	byAngle, err := recv.Reshape(g.Angles, mySlices, d)
	if err != nil {
		return nil, err
	}
	bySlice, err := byAngle.Permute(1, 0, 2)
	if err != nil {
		return nil, err
	}
	if err := c.Copy(transfer.Dev(sino), transfer.Dev(bySlice)); err != nil {
		return nil, fmt.Errorf("reslice to sinograms: %w", err)
	}
	if err := recv.Free(); err != nil {
		return nil, err
	}
	rg := tomo.Geometry{Size: g.Size, Angles: g.Angles, Slices: mySlices}
	return tomo.ReconstructDevice(dev, rg, sino, progress)
}

// writeVolume writes this rank's slab of the volume into out with MPI-IO:
// one file of (slices, size, size) float32, each rank its own slices.
func writeVolume(world mpi.Comm, out string, g tomo.Geometry, ch plan.Chunk, slab []float32) error {
	f, err := mpi.Create(world, out)
	if err != nil {
		return fmt.Errorf("output: %w", err)
	}
	err = f.SetSize(g.VolumeBytes())
	if err == nil {
		err = f.WriteAtAll(int64(ch.Start)*g.SliceBytes(), floatBytes(slab))
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("output %s: %w", out, err)
	}
	return nil
}

// floatBytes is the bytes of v in the machine's order (little-endian on
// every machine cuarray runs on), without a copy.
func floatBytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4)
}

// bytesFloats reads little-endian float32s.
func bytesFloats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	copy(floatBytes(out), b)
	return out
}
