package kernels

import (
	"errors"
	"fmt"
	"math"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/kernel"
)

// RampFilterWorkspace returns the workspace bytes RampFilter uses to filter
// rows rows of d detector values of itemSize bytes in one pass: the filter
// taps, then the filtered rows.
func RampFilterWorkspace(rows int64, d int, itemSize int64) int64 {
	return accounting.AlignUp(int64(2*d-1)*itemSize) + rows*int64(d)*itemSize
}

// maxRampDetectors is the longest detector axis RampFilter takes:
// ramp_filter (fbp.cu) indexes its 2D - 1 taps with a 32-bit int.
const maxRampDetectors = 1 << 30

// RampFilter filters every row (the last axis) of sino, in place, with the
// Ram-Lak ramp filter of filtered backprojection, applied as a convolution
// in the detector domain (exact for band-limited data, no FFT, no padding
// to choose). sino is C-contiguous float32 or float64, with at most 2^30
// detectors (its last axis; a longer one is an error wrapping
// devarray.ErrShape).
//
// The filtered rows go to scratch memory from ws and are copied back. The
// faster algorithm filters all rows in one pass and needs
// RampFilterWorkspace(all rows); when ws only has room for fewer (a manual
// or preallocated workspace, or a device too full to grow it), RampFilter
// filters as many rows per pass as fit, at least one, and returns an error
// wrapping accounting.ErrPerfDegraded: the result is right, just slower.
// In query mode it reports the faster size through ws.Need and does not
// run. A nil ws means a temporary workspace, freed before returning.
func (k *Kernels) RampFilter(sino *devarray.DevArray, ws *accounting.Workspace) error {
	const op = "ramp filter"
	if err := k.guard(op, sino); err != nil {
		return err
	}
	if err := k.check(op, sino, true); err != nil {
		return err
	}
	e, suffix, err := floatKind(op, sino)
	if err != nil {
		return err
	}
	if !sino.IsContiguous() || sino.NDim() == 0 {
		return fmt.Errorf("kernels: %s: want a C-contiguous array of rows: %w", op, devarray.ErrNotViewable)
	}
	if sino.Size() == 0 {
		return nil
	}
	shape := sino.Shape()
	d := shape[len(shape)-1]
	if d > maxRampDetectors {
		// ramp_filter's tap index d - j + D - 1 is an int: up to 2D - 2.
		return fmt.Errorf("kernels: %s: %d detectors: at most %d (2^30) fit the kernel's 32-bit index: %w",
			op, d, maxRampDetectors, devarray.ErrShape)
	}
	rows := sino.Size() / int64(d)
	rowBytes := int64(d) * e.size
	tapBytes := accounting.AlignUp(int64(2*d-1) * e.size)
	fast := RampFilterWorkspace(rows, d, e.size)
	if ws == nil {
		ws = accounting.NewWorkspace(k.dev)
		defer ws.Free()
	}
	if ws.Querying() {
		return ws.Need(fast)
	}
	scratch, got, release, err := ws.BorrowRange(tapBytes+rowBytes, fast)
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	defer release()
	chunk := min((got-tapBytes)/rowBytes, rows)
	taps, out := scratch, scratch+devarray.Ptr(tapBytes)
	err = devarray.Use(func() error {
		if err := k.run("ramp_taps_"+suffix, int64(2*d-1),
			[]kernel.Arg{kernel.Memory(taps, tapBytes, kernel.Write), kernel.I32(int32(d))},
			func(m [][]byte) { refRampTaps(m[0], d, e) }); err != nil {
			return err
		}
		for r := int64(0); r < rows; r += chunk {
			n := min(chunk, rows-r)
			in := sino.Ptr() + devarray.Ptr(r*rowBytes)
			if err := k.run("ramp_filter_"+suffix, n*int64(d),
				[]kernel.Arg{kernel.Memory(out, n*rowBytes, kernel.Write), kernel.Memory(in, n*rowBytes, kernel.Read),
					kernel.Memory(taps, tapBytes, kernel.Read), kernel.I64(n), kernel.I32(int32(d))},
				func(m [][]byte) { refRampFilter(m[0], m[1], m[2], n, d, e) }); err != nil {
				return err
			}
			if err := k.copyDtoD(in, out, n*rowBytes); err != nil {
				return err
			}
		}
		return nil
	}, sino)
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	if chunk < rows {
		return fmt.Errorf("kernels: %s: %d passes of %d rows in a %s workspace (one pass needs %s): %w",
			op, (rows+chunk-1)/chunk, chunk, accounting.FormatBytes(got), accounting.FormatBytes(fast), accounting.ErrPerfDegraded)
	}
	return nil
}

// BackprojectWorkspace returns the workspace bytes Backproject uses for a
// angles of itemSize bytes: the table of their cosines and sines.
func BackprojectWorkspace(a int, itemSize int64) int64 { return int64(2*a) * itemSize }

// Backproject writes into img, C-contiguous (slices, N, N), the
// backprojection of sino, C-contiguous (slices, A, D), over A angles evenly
// spaced in [0, π), scaled by π/A: with a ramp-filtered sinogram, the
// filtered backprojection reconstruction. Pixel (y, x) of an image lies at
// (x - (N-1)/2, (N-1)/2 - y) and detector bin j at j - (D-1)/2, in units of
// the detector spacing. Both arrays are float32 or both float64. The angle
// table is kept in ws (nil: a temporary workspace); in query mode the call
// reports its size and does not run.
//
// On a GPU it runs backproject_tiled (fbp.cu: tiles of pixels per block,
// the sinogram bins a tile reads staged in shared memory, several pixels
// per thread), which gives the same bits as the one-thread-per-pixel
// backproject kernel; geometries too large for its floor (BackprojectTiled
// false) run backproject itself.
func (k *Kernels) Backproject(img, sino *devarray.DevArray, ws *accounting.Workspace) error {
	return k.backproject(img, sino, ws, bpAuto)
}

// bpKernel picks the GPU kernel of a backprojection.
type bpKernel int

const (
	bpAuto  bpKernel = iota // backproject_tiled where it fits, else backproject
	bpPlain                 // backproject: one thread per pixel, operands from global memory
	bpTiled                 // backproject_tiled, which the caller has checked fits
)

// The tile of backproject_tiled (fbp.cu's BP_TX, BP_TY, BP_PX, BP_PY):
// blocks of bpThreadsX × bpThreadsY threads, each block a tile of
// bpTileW × bpTileH pixels of one slice.
const (
	bpThreadsX = 32
	bpThreadsY = 8
	bpTileW    = bpThreadsX * 4
	bpTileH    = bpThreadsY * 2
	// bpMaxBlocks caps the tiled kernel's grid; its blocks loop over the
	// tiles beyond it.
	bpMaxBlocks = 1 << 24
)

// BackprojectTiled reports whether Backproject runs the tiled kernel for
// images of n × n pixels from d detector bins of itemSize bytes (4 or 8):
// its floor, one add of 1.5·2^23 (float) or 1.5·2^52 (double), is exact for
// |t| < 2^22 (float) and its int holds |t| < 2^31 (double), and t of a
// tile's pixels stays within |cx| + |cy| + (d-1)/2, where a tile reaches
// bpTileW + bpTileH pixels past the image at most.
func BackprojectTiled(n, d int, itemSize int64) bool {
	bound := float64(n) + float64(bpTileW+bpTileH) + float64(d)/2 + 8
	if itemSize == 4 {
		return bound < 1<<22
	}
	return bound < 1<<31
}

// BackprojectUpdates is the pixel-angle updates of a backprojection of
// slices sinograms of a angles into n × n images: the work a rate in
// updates per second counts.
func BackprojectUpdates(slices int64, a, n int) float64 {
	return float64(slices) * float64(a) * float64(n) * float64(n)
}

func (k *Kernels) backproject(img, sino *devarray.DevArray, ws *accounting.Workspace, which bpKernel) error {
	const op = "backproject"
	if err := k.guard(op, img, sino); err != nil {
		return err
	}
	g, err := k.checkStacks(op, img, sino, true)
	if err != nil || g.imgSize == 0 || g.a == 0 {
		return err
	}
	e, suffix, slices, a, d, n := g.e, g.suffix, g.slices, g.a, g.d, g.n
	scale := math.Pi / float64(a)
	if which == bpAuto {
		which = bpPlain
		if BackprojectTiled(n, d, e.size) {
			which = bpTiled
		}
	}
	return k.withTrigTable(op, g, ws, func(trig devarray.Ptr, tableBytes int64) error {
		args := []kernel.Arg{kernel.Out(img), kernel.In(sino), kernel.Memory(trig, tableBytes, kernel.Read),
			kernel.I64(slices), kernel.I32(int32(a)), kernel.I32(int32(d)), kernel.I32(int32(n)), scalar(e, scale)}
		if k.gpu != nil && which == bpTiled {
			tiles := slices * ((int64(n) + bpTileW - 1) / bpTileW) * ((int64(n) + bpTileH - 1) / bpTileH)
			return k.launchConfig("backproject_tiled_"+suffix, kernel.Config{
				Grid: kernel.Dim3{uint32(max(min(tiles, bpMaxBlocks), 1)), 1, 1}, Block: kernel.Dim3{bpThreadsX, bpThreadsY, 1}}, args)
		}
		return k.run("backproject_"+suffix, img.Size(), args,
			func(m [][]byte) { refBackproject(m[0], m[1], m[2], slices, a, d, n, scale, e) })
	}, img, sino)
}

// withTrigTable runs f with the table of the cosines and sines of g's
// angles (BackprojectWorkspace bytes) in scratch memory from ws (nil: a
// temporary workspace), inside devarray.Use of arrays. In query mode it
// only reports the table's size to ws.
func (k *Kernels) withTrigTable(op string, g stacks, ws *accounting.Workspace, f func(trig devarray.Ptr, tableBytes int64) error, arrays ...*devarray.DevArray) error {
	tableBytes := BackprojectWorkspace(g.a, g.e.size)
	if ws == nil {
		ws = accounting.NewWorkspace(k.dev)
		defer ws.Free()
	}
	if ws.Querying() {
		return ws.Need(tableBytes)
	}
	trig, release, err := ws.Borrow(tableBytes)
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	defer release()
	err = devarray.Use(func() error {
		if err := k.run("trig_table_"+g.suffix, int64(g.a),
			[]kernel.Arg{kernel.Memory(trig, tableBytes, kernel.Write), kernel.I32(int32(g.a))},
			func(m [][]byte) { refTrigTable(m[0], g.a, g.e) }); err != nil {
			return err
		}
		return f(trig, tableBytes)
	}, arrays...)
	if err != nil {
		return fmt.Errorf("kernels: %s: %w", op, err)
	}
	return nil
}

// stacks are the images (slices, N, N) and sinograms (slices, A, D) of
// Project and Backproject.
type stacks struct {
	e        element
	suffix   string
	slices   int64
	a, d, n  int
	imgSize  int64
	sinoSize int64
}

// checkStacks checks img and sino for Project (imgWritten false) and
// Backproject (true): both C-contiguous, one float dtype, whole stacks of
// the same slices, and axes that fit the kernels' int parameters.
func (k *Kernels) checkStacks(op string, img, sino *devarray.DevArray, imgWritten bool) (stacks, error) {
	if err := k.check(op, img, imgWritten); err != nil {
		return stacks{}, err
	}
	if err := k.check(op, sino, !imgWritten); err != nil {
		return stacks{}, err
	}
	e, suffix, err := floatKind(op, sino)
	if err != nil {
		return stacks{}, err
	}
	is, ss := img.Shape(), sino.Shape()
	if img.DType() != sino.DType() || len(is) != 3 || len(ss) != 3 || is[0] != ss[0] || is[1] != is[2] {
		return stacks{}, fmt.Errorf("kernels: %s: image %v %v, sinogram %v %v: want (S, N, N) and (S, A, D) of one dtype: %w",
			op, is, img.DType(), ss, sino.DType(), devarray.ErrShape)
	}
	if !img.IsContiguous() || !sino.IsContiguous() {
		return stacks{}, fmt.Errorf("kernels: %s: want C-contiguous arrays: %w", op, devarray.ErrNotViewable)
	}
	if ss[1] > math.MaxInt32 || ss[2] > math.MaxInt32 || is[1] > math.MaxInt32/4 {
		return stacks{}, fmt.Errorf("kernels: %s: axes %v, %v too long: %w", op, is, ss, devarray.ErrShape)
	}
	return stacks{e: e, suffix: suffix, slices: int64(ss[0]), a: ss[1], d: ss[2], n: is[1], imgSize: img.Size(), sinoSize: sino.Size()}, nil
}

// run launches kernel name over n items on a GPU with args, or runs ref
// on sim on the memory the array and Memory arguments declare, in order.
func (k *Kernels) run(name string, n int64, args []kernel.Arg, ref func([][]byte)) error {
	if k.gpu != nil {
		return k.launch(name, n, args...)
	}
	var ranges []driver.Range
	for i, a := range args {
		if r, ok := a.Range(i); ok {
			ranges = append(ranges, r)
		}
	}
	return k.hostAccess(name, ranges, func(m [][]byte) error { ref(m); return nil })
}

// copyDtoD copies n bytes on the device, on the kernels' stream, and waits
// for it unless the kernels are Async.
func (k *Kernels) copyDtoD(dst, src devarray.Ptr, n int64) error {
	if k.stream == nil && !k.async {
		return k.dev.CopyDtoD(dst, src, n)
	}
	if err := k.queue().CopyDtoDAsync(dst, src, n); err != nil {
		return err
	}
	return k.settle()
}

// errDegraded reports whether err is only the non-fatal ErrPerfDegraded.
func errDegraded(err error) bool { return errors.Is(err, accounting.ErrPerfDegraded) }
