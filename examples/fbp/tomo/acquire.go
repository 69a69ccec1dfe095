package tomo

import (
	"errors"
	"fmt"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// Scan is what a scanner hands over: the sinograms, and here also the
// phantom they were made from, both on the host, C order.
type Scan struct {
	Geometry  Geometry  `json:"geometry"`
	Phantom   []float32 `json:"-"` // (Slices, Size, Size)
	Sinograms []float32 `json:"-"` // (Slices, Angles, Size)
	Plan      plan.Plan `json:"plan"`
	Seconds   float64   `json:"seconds"`
	Traffic   Traffic   `json:"ledger"`
}

// Acquire makes the phantom and its sinograms on dev, in chunks that
// plan.ForDevice picks for kernels.ProjectMethod (phantom slab, sinograms
// and angle table must fit), and downloads both. It frees all it allocates
// on the device, also on failure.
func Acquire(dev driver.Device, g Geometry, progress Progress) (*Scan, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	params := plan.Params{"angles": g.Angles, "detectors": g.Detectors()}
	p, err := plan.ForDevice(dev, kernels.ProjectMethod, g.VolumeShape(), 0, DType, params)
	if err != nil {
		return nil, fmt.Errorf("tomo: acquire %v: %w", g, err)
	}
	scan := &Scan{Geometry: g, Plan: p,
		Phantom:   make([]float32, g.Slices*g.imageLen()),
		Sinograms: make([]float32, g.Slices*g.sinogramLen()),
	}
	start := time.Now()
	snap, err := dev.Ledger().Measure("tomo acquire", func() error {
		k, err := kernels.New(dev)
		if err != nil {
			return err
		}
		c, err := transfer.New(dev)
		if err != nil {
			return errors.Join(err, k.Close())
		}
		ws := accounting.NewWorkspace(dev)
		err = acquireChunks(dev, k, c, ws, scan, params, progress)
		return errors.Join(err, ws.Free(), c.Close(), k.Close())
	})
	scan.Seconds = time.Since(start).Seconds()
	scan.Traffic = trafficOf(snap)
	if err != nil {
		return nil, fmt.Errorf("tomo: acquire %v: %w", g, err)
	}
	return scan, nil
}

func acquireChunks(dev driver.Device, k *kernels.Kernels, c *transfer.Copier, ws *accounting.Workspace, scan *Scan, params plan.Params, progress Progress) error {
	g := scan.Geometry
	volSlice, sinoSlice := g.imageLen(), g.sinogramLen()
	for _, ch := range scan.Plan.Chunks {
		err := func() error {
			vol, err := devarray.Empty(dev, DType, ch.Len, g.Size, g.Size)
			if err != nil {
				return err
			}
			defer vol.Free()
			if err := k.Phantom(vol, kernels.SheppLogan3D, ch.Start, g.Slices); err != nil {
				return err
			}
			sino, err := kernels.ProjectMethod.Run(plan.Env{Dev: dev, Workspace: ws}, vol, 0, params)
			if err != nil {
				return err
			}
			defer sino.Free()
			lo, hi := ch.Start, ch.Start+ch.Len
			return errors.Join(
				c.Copy(transfer.Host(scan.Phantom[lo*volSlice:hi*volSlice], vol.Shape()...), transfer.Dev(vol)),
				c.Copy(transfer.Host(scan.Sinograms[lo*sinoSlice:hi*sinoSlice], sino.Shape()...), transfer.Dev(sino)))
		}()
		if err != nil {
			return fmt.Errorf("slices [%d, %d): %w", ch.Start, ch.Start+ch.Len, err)
		}
		progress.report("acquire", ch.Start+ch.Len, g.Slices)
	}
	return nil
}
