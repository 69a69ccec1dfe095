package tomo

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// ReconstructDevice reconstructs sinograms that are already on dev, as a
// reslice between processes leaves them: sino is (Slices, Angles, Size)
// float32 and contiguous, and is filtered in place. It plans the chunks
// with plan.ForDevice for kernels.ReconstructMethod in the memory the
// device has left beside the sinograms, runs them one after the other,
// and downloads each chunk's images into the returned Result's Volume as
// it is done: the images are the only bytes that cross to the host.
// KernelSeconds is the time spent in the chunks' filter and
// backprojection (each synchronous). It frees all it allocates, also on
// failure. The volume is the one Reconstruct gives for the same
// sinograms, bit for bit.
func ReconstructDevice(dev driver.Device, g Geometry, sino *devarray.DevArray, progress Progress) (*Result, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if err := sino.Err(); err != nil {
		return nil, fmt.Errorf("tomo: sinograms on the device: %w", err)
	}
	if want := g.SinogramShape(); sino.DType() != DType || !sino.IsContiguous() || !slices.Equal(sino.Shape(), want[:]) {
		return nil, fmt.Errorf("tomo: sinograms %v %v on the device: want contiguous %v of %v: %w", sino.DType(), sino.Shape(), DType, want, devarray.ErrShape)
	}
	p, err := plan.ForDevice(dev, kernels.ReconstructMethod, g.SinogramShape(), 0, DType, g.params())
	if err != nil {
		return nil, fmt.Errorf("tomo: device-resident reconstruction of %v: %w", g, err)
	}
	res := &Result{Mode: Resident, Geometry: g, Plan: p, Streams: 1, Volume: make([]float32, g.Slices*g.imageLen())}
	start := time.Now()
	snap, err := dev.Ledger().Measure("tomo device-resident", func() error {
		c, err := transfer.New(dev)
		if err != nil {
			return err
		}
		env := plan.Env{Dev: dev, Workspace: accounting.NewWorkspace(dev)}
		err = res.deviceChunks(env, c, sino, progress)
		return errors.Join(err, env.Workspace.Free(), c.Close())
	})
	res.Seconds = time.Since(start).Seconds()
	res.Traffic = trafficOf(snap)
	if err != nil {
		return nil, fmt.Errorf("tomo: device-resident reconstruction of %v: %w", g, err)
	}
	return res, nil
}

// deviceChunks runs every chunk of res.Plan on its slices of sino.
func (res *Result) deviceChunks(env plan.Env, c *transfer.Copier, sino *devarray.DevArray, progress Progress) error {
	g := res.Geometry
	for _, ch := range res.Plan.Chunks {
		lo, hi := ch.Start, ch.Start+ch.Len
		err := func() error {
			in, err := sino.Slice(0, lo, hi)
			if err != nil {
				return err
			}
			t0 := time.Now()
			img, err := kernels.ReconstructMethod.Run(env, in, 0, g.params())
			if errors.Is(err, accounting.ErrPerfDegraded) {
				res.Degraded, err = true, nil
			}
			if err != nil {
				return err
			}
			res.KernelSeconds += time.Since(t0).Seconds()
			defer img.Free()
			out := res.Volume[lo*g.imageLen() : hi*g.imageLen()]
			return c.Copy(transfer.Host(out, img.Shape()...), transfer.Dev(img))
		}()
		if err != nil {
			return fmt.Errorf("slices [%d, %d): %w", lo, hi, err)
		}
		progress.report(string(Resident), hi, g.Slices)
	}
	return nil
}
