package tomo

import (
	"fmt"
	"math"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/plan"
)

// Geometry is a parallel-beam scan of a stack of Slices images of Size ×
// Size pixels, at Angles angles evenly spaced in [0, π), on a detector of
// Size bins (pixel and bin spacing 1). The slices are cubic voxels centred
// on the phantom: Slices = Size spans it, fewer take its middle.
type Geometry struct {
	Size   int `json:"size"`
	Angles int `json:"angles"`
	Slices int `json:"slices"`
}

// DType is the element type of the example's arrays.
const DType = devarray.Float32

// Detectors is the number of detector bins: Size.
func (g Geometry) Detectors() int { return g.Size }

// Check returns an error for a geometry that cannot be scanned.
func (g Geometry) Check() error {
	if g.Size < 1 || g.Angles < 1 || g.Slices < 1 {
		return fmt.Errorf("tomo: geometry %+v: size, angles and slices must be at least 1: %w", g, devarray.ErrShape)
	}
	if g.Size > 1<<15 || g.Angles > 1<<20 {
		return fmt.Errorf("tomo: geometry %+v: at most 32768 pixels a side and 2^20 angles: %w", g, devarray.ErrShape)
	}
	for _, n := range []int64{int64(g.Slices) * int64(g.Size) * int64(g.Size), int64(g.Slices) * int64(g.Angles) * int64(g.Size)} {
		if n > math.MaxInt64/8 || n > math.MaxInt/8 {
			return fmt.Errorf("tomo: geometry %+v: too many elements: %w", g, devarray.ErrShape)
		}
	}
	return nil
}

// VolumeShape is the shape of the phantom and of the reconstruction.
func (g Geometry) VolumeShape() [3]int { return [3]int{g.Slices, g.Size, g.Size} }

// SinogramShape is the shape of the sinograms.
func (g Geometry) SinogramShape() [3]int { return [3]int{g.Slices, g.Angles, g.Detectors()} }

// VolumeBytes is the size of the volume in bytes.
func (g Geometry) VolumeBytes() int64 { return int64(g.Slices) * g.SliceBytes() }

// SinogramBytes is the size of the sinograms in bytes.
func (g Geometry) SinogramBytes() int64 { return int64(g.Slices) * g.SinogramSliceBytes() }

// SliceBytes is the size of one image.
func (g Geometry) SliceBytes() int64 { return int64(g.Size) * int64(g.Size) * DType.Size() }

// SinogramSliceBytes is the size of one slice's sinogram.
func (g Geometry) SinogramSliceBytes() int64 {
	return int64(g.Angles) * int64(g.Detectors()) * DType.Size()
}

// imageLen and sinogramLen are the float32 values of one slice's image
// and of its sinogram: the strides of the host arrays along the slice axis.
func (g Geometry) imageLen() int    { return g.Size * g.Size }
func (g Geometry) sinogramLen() int { return g.Angles * g.Detectors() }

// String is "256×256×64, 360 angles".
func (g Geometry) String() string {
	return fmt.Sprintf("%d×%d×%d, %d angles (%s of sinograms, %s of volume)", g.Size, g.Size, g.Slices, g.Angles,
		accounting.FormatBytes(g.SinogramBytes()), accounting.FormatBytes(g.VolumeBytes()))
}

// params are the reconstruction's plan parameters: the image size.
func (g Geometry) params() plan.Params { return plan.Params{"size": g.Size} }
