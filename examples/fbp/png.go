package main

import (
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"

	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

// Display windows of the PNG: phantom and reconstruction map [lo, hi] to
// black..white (the soft tissue's contrast; the skull, at 1, is white), the
// difference maps ±diffRange to black..white around mid-grey.
const (
	windowLo, windowHi = 0.0, 0.5
	diffRange          = 0.25
	gap                = 4 // pixels between the panels
)

// slicePanels draws the middle slice: the phantom, the reconstruction and
// reconstruction − phantom, side by side on white.
func slicePanels(scan *tomo.Scan, res *tomo.Result) *image.Gray {
	n := scan.Geometry.Size
	mid := scan.Geometry.Slices / 2
	off := mid * n * n
	img := image.NewGray(image.Rect(0, 0, 3*n+2*gap, n))
	for i := range img.Pix {
		img.Pix[i] = 255
	}
	level := func(v, lo, hi float64) uint8 {
		t := (v - lo) / (hi - lo)
		return uint8(math.Round(255 * math.Min(1, math.Max(0, t))))
	}
	for y := range n {
		for x := range n {
			p, r := float64(scan.Phantom[off+y*n+x]), float64(res.Volume[off+y*n+x])
			img.SetGray(x, y, color.Gray{level(p, windowLo, windowHi)})
			img.SetGray(n+gap+x, y, color.Gray{level(r, windowLo, windowHi)})
			img.SetGray(2*(n+gap)+x, y, color.Gray{level(r-p, -diffRange, diffRange)})
		}
	}
	return img
}

// writeSlicePNG writes slicePanels to path.
func writeSlicePNG(path string, scan *tomo.Scan, res *tomo.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(png.Encode(f, slicePanels(scan, res)), f.Close())
}
