package tomo

import (
	"fmt"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
)

// Projections returns sinograms, (Slices, Angles, Size) as Scan holds
// them, in the order a detector records them: (Angles, Slices, Size), one
// projection image of every slice per angle. A run across processes
// splits these by angle.
func Projections(g Geometry, sinograms []float32) ([]float32, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if want := g.Slices * g.sinogramLen(); len(sinograms) != want {
		return nil, fmt.Errorf("tomo: %d sinogram values for %v: want %d: %w", len(sinograms), g, want, devarray.ErrShape)
	}
	d := g.Detectors()
	out := make([]float32, len(sinograms))
	for s := range g.Slices {
		for a := range g.Angles {
			copy(out[(a*g.Slices+s)*d:(a*g.Slices+s+1)*d], sinograms[(s*g.Angles+a)*d:(s*g.Angles+a+1)*d])
		}
	}
	return out, nil
}

// Shares cuts total items into n runs as even as can be, the longer ones
// first: how a run across n processes splits the angles and the slices.
// n must be 1 to total.
func Shares(total, n int) ([]plan.Chunk, error) {
	if n < 1 || n > total {
		return nil, fmt.Errorf("tomo: %d items in %d shares: want 1 to %d shares: %w", total, n, total, devarray.ErrShape)
	}
	return evenChunks(total, n), nil
}

// SinogramsOf is the inverse of Projections: projections (Angles, Slices,
// Size) as a detector records them, in the order Reconstruct takes,
// (Slices, Angles, Size).
func SinogramsOf(g Geometry, projections []float32) ([]float32, error) {
	if err := g.Check(); err != nil {
		return nil, err
	}
	if want := g.Slices * g.sinogramLen(); len(projections) != want {
		return nil, fmt.Errorf("tomo: %d projection values for %v: want %d: %w", len(projections), g, want, devarray.ErrShape)
	}
	d := g.Detectors()
	out := make([]float32, len(projections))
	for a := range g.Angles {
		for s := range g.Slices {
			copy(out[(s*g.Angles+a)*d:(s*g.Angles+a+1)*d], projections[(a*g.Slices+s)*d:(a*g.Slices+s+1)*d])
		}
	}
	return out, nil
}
