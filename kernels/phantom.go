package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
)

// Ellipsoid is one term of a 3-D phantom: Value is added to every point
// inside the ellipsoid of semi-axes A, B, C centred at X0, Y0, Z0 and
// turned by the Euler angles Phi, Theta, Psi (degrees; z, x, z). Lengths
// are in phantom units: the volume spans [-1, 1] on each axis.
type Ellipsoid struct {
	Value           float64
	A, B, C         float64
	X0, Y0, Z0      float64
	Phi, Theta, Psi float64
}

// SheppLogan3D is the modified 3-D Shepp–Logan head phantom (Toft's higher
// contrast intensities, the table of Schabel's phantom3d): the skull at
// 1, the brain at 0.2, ventricles at 0, small tumours at 0.3.
var SheppLogan3D = []Ellipsoid{
	{1, .6900, .920, .810, 0, 0, 0, 0, 0, 0},
	{-.8, .6624, .874, .780, 0, -.0184, 0, 0, 0, 0},
	{-.2, .1100, .310, .220, .22, 0, 0, -18, 0, 10},
	{-.2, .1600, .410, .280, -.22, 0, 0, 18, 0, 10},
	{.1, .2100, .250, .410, 0, .35, -.15, 0, 0, 0},
	{.1, .0460, .046, .050, 0, .1, .25, 0, 0, 0},
	{.1, .0460, .046, .050, 0, -.1, .25, 0, 0, 0},
	{.1, .0460, .023, .050, -.08, -.605, 0, 0, 0, 0},
	{.1, .0230, .023, .020, 0, -.606, 0, 0, 0, 0},
	{.1, .0230, .046, .020, .06, -.605, 0, 0, 0, 0},
}

// PhantomMaxEllipsoids is the most ellipsoids one phantom may have
// (PHANTOM_MAX in radon.cu: the table is a kernel parameter).
const PhantomMaxEllipsoids = 16

// ellipsoidWords is the float64s of struct Ellipsoid in radon.cu.
const ellipsoidWords = 16

// prepared is an ellipsoid as the kernel tests it (struct Ellipsoid).
type prepared [ellipsoidWords]float64

// prepare turns an ellipsoid into its rotation (Euler z-x-z), centre and
// inverse semi-axes.
func (e Ellipsoid) prepare() (prepared, error) {
	var p prepared
	for _, v := range []float64{e.Value, e.X0, e.Y0, e.Z0, e.Phi, e.Theta, e.Psi} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return p, fmt.Errorf("kernels: phantom: ellipsoid %+v: not finite: %w", e, driver.ErrInvalidValue)
		}
	}
	if !(e.A > 0 && e.B > 0 && e.C > 0) || math.IsInf(e.A+e.B+e.C, 0) {
		return p, fmt.Errorf("kernels: phantom: ellipsoid %+v: semi-axes must be positive and finite: %w", e, driver.ErrInvalidValue)
	}
	rad := math.Pi / 180
	sf, cf := math.Sincos(e.Phi * rad)
	st, ct := math.Sincos(e.Theta * rad)
	sp, cp := math.Sincos(e.Psi * rad)
	copy(p[0:9], []float64{
		cp*cf - ct*sf*sp, cp*sf + ct*cf*sp, sp * st,
		-sp*cf - ct*sf*cp, -sp*sf + ct*cf*cp, cp * st,
		st * sf, -st * cf, ct,
	})
	copy(p[9:16], []float64{e.X0, e.Y0, e.Z0, 1 / e.A, 1 / e.B, 1 / e.C, e.Value})
	return p, nil
}

// encodePhantom lays the prepared table out as struct PhantomTable.
func encodePhantom(table []prepared) []byte {
	b := make([]byte, 8+8*ellipsoidWords*PhantomMaxEllipsoids)
	binary.LittleEndian.PutUint32(b, uint32(len(table)))
	for i, p := range table {
		for j, v := range p {
			binary.LittleEndian.PutUint64(b[8+8*(ellipsoidWords*i+j):], math.Float64bits(v))
		}
	}
	return b
}

// PhantomSubsamples is the points per axis Phantom averages in each voxel:
// a voxel's value is the mean of the phantom over it (27 points), not its
// value at the centre, so that edges have partial-volume values as a
// scanner sees them, rather than aliased steps.
const PhantomSubsamples = 3

// phantomGrid is where Phantom samples: voxel centres z0 + s h (and the
// same spacing h in-plane), sub points per axis in each, f0 + i hs from
// the centre, weighted w.
type phantomGrid struct {
	z0, h     float64
	sub       int
	f0, hs, w float64
}

func newPhantomGrid(n, first, total, sub int) phantomGrid {
	h := 2 / float64(n)
	return phantomGrid{
		z0: (float64(first) - float64(total-1)*0.5) * h, h: h,
		sub: sub, f0: (0.5/float64(sub) - 0.5) * h, hs: h / float64(sub), w: 1 / float64(sub*sub*sub),
	}
}

// Phantom writes slices [first, first+S) of a phantom of total slices into
// vol, C-contiguous (S, N, N) float32 or float64. The voxels are cubes of
// side 2/N phantom units, the image centred on the z axis and slice g at
// z = (g - (total-1)/2) 2/N: with total = N the volume spans the phantom's
// cube. A voxel's value is the mean, over PhantomSubsamples³ points of the
// voxel, of the sum of the values of the ellipsoids a point lies in.
// Stacking the slabs of any split gives the same volume.
func (k *Kernels) Phantom(vol *devarray.DevArray, ellipsoids []Ellipsoid, first, total int) error {
	const op = "phantom"
	if err := k.guard(op, vol); err != nil {
		return err
	}
	if err := k.check(op, vol, true); err != nil {
		return err
	}
	e, suffix, err := floatKind(op, vol)
	if err != nil {
		return err
	}
	shape := vol.Shape()
	if len(shape) != 3 || shape[1] != shape[2] || first < 0 || first+shape[0] > total {
		return fmt.Errorf("kernels: %s: volume %v from slice %d of %d: want (S, N, N) inside the stack: %w",
			op, shape, first, total, devarray.ErrShape)
	}
	if !vol.IsContiguous() {
		return fmt.Errorf("kernels: %s: want a C-contiguous volume: %w", op, devarray.ErrNotViewable)
	}
	if len(ellipsoids) > PhantomMaxEllipsoids {
		return fmt.Errorf("kernels: %s: %d ellipsoids, at most %d: %w", op, len(ellipsoids), PhantomMaxEllipsoids, driver.ErrInvalidValue)
	}
	table := make([]prepared, len(ellipsoids))
	for i, el := range ellipsoids {
		if table[i], err = el.prepare(); err != nil {
			return err
		}
	}
	slices, n := int64(shape[0]), shape[1]
	if vol.Size() == 0 {
		return nil
	}
	if n > math.MaxInt32/2 {
		return fmt.Errorf("kernels: %s: %d pixels a side: %w", op, n, devarray.ErrShape)
	}
	g := newPhantomGrid(n, first, total, PhantomSubsamples)
	err = devarray.Use(func() error {
		return k.run("phantom_"+suffix, vol.Size(),
			[]kernel.Arg{kernel.Out(vol), kernel.Struct(encodePhantom(table), 8), kernel.I64(slices), kernel.I32(int32(n)),
				kernel.F64(g.z0), kernel.F64(g.h), kernel.I32(int32(g.sub)), kernel.F64(g.f0), kernel.F64(g.hs), kernel.F64(g.w)},
			func(m [][]byte) { refPhantom(m[0], table, slices, n, g, e) })
	}, vol)
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	return nil
}
