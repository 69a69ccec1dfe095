package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/kernel"
)

// Fill sets every element of a (float32 or float64, any strides) to v.
func (k *Kernels) Fill(a *devarray.DevArray, v float64) error {
	if err := k.guard("fill", a); err != nil {
		return err
	}
	return k.unary("fill", a, v, refFill)
}

// Scale multiplies every element of a by alpha.
func (k *Kernels) Scale(a *devarray.DevArray, alpha float64) error {
	if err := k.guard("scale", a); err != nil {
		return err
	}
	return k.unary("scale", a, alpha, refScale)
}

func (k *Kernels) unary(op string, a *devarray.DevArray, v float64, ref func([]byte, int64, layout, element, float64)) error {
	if err := k.check(op, a, true); err != nil {
		return err
	}
	e, suffix, err := floatKind(op, a)
	if err != nil {
		return err
	}
	l, err := layoutOf(a)
	if err != nil || l.n == 0 {
		return err
	}
	return devarray.Use(func() error {
		if k.gpu != nil {
			arr := kernel.InOut(a)
			if op == "fill" {
				arr = kernel.Out(a)
			}
			return k.launch(op+"_"+suffix, l.n, arr, kernel.Struct(l.encode(), 8), scalar(e, v))
		}
		return k.access(op+"_"+suffix, func(mem [][]byte, base []int64) error {
			ref(mem[0], base[0], l, e, v)
			return nil
		}, 1, a)
	}, a)
}

// Axpy computes y = alpha*x + y elementwise. x and y must have the same
// shape and dtype (float32 or float64); their strides may differ.
func (k *Kernels) Axpy(y *devarray.DevArray, alpha float64, x *devarray.DevArray) error {
	if err := k.guard("axpy", y, x); err != nil {
		return err
	}
	if err := k.check("axpy", y, true); err != nil {
		return err
	}
	if err := k.check("axpy", x, false); err != nil {
		return err
	}
	e, suffix, err := floatKind("axpy", y)
	if err != nil {
		return err
	}
	if x.DType() != y.DType() {
		return fmt.Errorf("kernels: axpy: x is %v, y is %v: want the same dtype (convert one first): %w",
			x.DType(), y.DType(), devarray.ErrDType)
	}
	if !slices.Equal(x.Shape(), y.Shape()) {
		return fmt.Errorf("kernels: axpy: x has shape %v, y %v: want the same shape: %w",
			x.Shape(), y.Shape(), devarray.ErrShape)
	}
	ly, err := layoutOf(y)
	if err != nil || ly.n == 0 {
		return err
	}
	lx, _ := layoutOf(x)
	return devarray.Use(func() error {
		if k.gpu != nil {
			return k.launch("axpy_"+suffix, ly.n, kernel.InOut(y), kernel.Struct(ly.encode(), 8), kernel.In(x), kernel.Struct(lx.encode(), 8), scalar(e, alpha))
		}
		return k.access("axpy_"+suffix, func(mem [][]byte, base []int64) error {
			refAxpy(mem[0], base[0], ly, mem[1], base[1], lx, e, alpha)
			return nil
		}, 1, y, x)
	}, y, x)
}

// result runs a reduction kernel that adds into one 8-byte device word, and
// returns the word: scratch memory is allocated, zeroed on the kernels'
// stream, read back after the kernel and freed, all counted in the ledger.
// It waits for its result, Async or not.
func (k *Kernels) result(name string, n int64, args func(out kernel.Arg) []kernel.Arg) (uint64, error) {
	out, err := k.dev.Malloc(8)
	if err != nil {
		return 0, err
	}
	defer k.dev.Free(out)
	sync := k.WithStream(k.stream)
	if err := sync.queue().MemsetAsync(out, 0, 8); err != nil {
		return 0, err
	}
	if err := sync.launch(name, n, args(kernel.Memory(out, 8, kernel.ReadWrite))...); err != nil {
		return 0, err
	}
	var b [8]byte
	if err := k.dev.CopyDtoH(b[:], out); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// Sum returns the sum of a's elements (float32 or float64), accumulated in
// float64. The GPU adds in parallel, so the last bits depend on the order.
func (k *Kernels) Sum(a *devarray.DevArray) (float64, error) {
	if err := k.guard("sum", a); err != nil {
		return 0, err
	}
	if err := k.check("sum", a, false); err != nil {
		return 0, err
	}
	k = k.WithStream(k.stream) // it waits for its result, Async or not
	e, suffix, err := floatKind("sum", a)
	if err != nil {
		return 0, err
	}
	l, err := layoutOf(a)
	if err != nil || l.n == 0 {
		return 0, err
	}
	var sum float64
	err = devarray.Use(func() error {
		if k.gpu != nil {
			bits, err := k.result("sum_"+suffix, l.n, func(out kernel.Arg) []kernel.Arg {
				return []kernel.Arg{kernel.In(a), kernel.Struct(l.encode(), 8), out}
			})
			sum = math.Float64frombits(bits)
			return err
		}
		return k.access("sum_"+suffix, func(mem [][]byte, base []int64) error {
			sum = refSum(mem[0], base[0], l, e)
			return nil
		}, 0, a)
	}, a)
	if err != nil {
		return 0, fmt.Errorf("kernels: sum: %w", err)
	}
	return sum, nil
}

// Checksum returns Checksum of a's bytes. a must be C-contiguous (Pack a
// strided view first). Host and device agree bit for bit, so a test can
// check device data without copying it back.
func (k *Kernels) Checksum(a *devarray.DevArray) (uint64, error) {
	if err := k.guard("checksum", a); err != nil {
		return 0, err
	}
	if err := k.check("checksum", a, false); err != nil {
		return 0, err
	}
	k = k.WithStream(k.stream) // it waits for its result, Async or not
	if !a.IsContiguous() {
		return 0, fmt.Errorf("kernels: checksum: the array is not C-contiguous; Pack it first: %w", devarray.ErrNotViewable)
	}
	n := a.NBytes()
	if n == 0 {
		return 0, nil
	}
	var sum uint64
	err := devarray.Use(func() error {
		if k.gpu != nil {
			var err error
			sum, err = k.result("checksum", (n+3)/4, func(out kernel.Arg) []kernel.Arg {
				return []kernel.Arg{kernel.In(a), kernel.I64(n), out}
			})
			return err
		}
		return k.access("checksum", func(mem [][]byte, base []int64) error {
			sum = Checksum(mem[0][base[0] : base[0]+n])
			return nil
		}, 0, a)
	}, a)
	if err != nil {
		return 0, fmt.Errorf("kernels: checksum: %w", err)
	}
	return sum, nil
}

// Pack copies the elements of src (any strides) in C order into dst, which
// must be C-contiguous with src's shape and dtype: a strided gather on the
// device, the step that lets one contiguous copy move a strided view.
func (k *Kernels) Pack(dst, src *devarray.DevArray) error {
	if err := k.guard("pack", dst, src); err != nil {
		return err
	}
	return k.move("pack", dst, src, true)
}

// Unpack copies the C-contiguous src into dst (any strides) element by
// element: the scatter that undoes Pack.
func (k *Kernels) Unpack(dst, src *devarray.DevArray) error {
	if err := k.guard("unpack", dst, src); err != nil {
		return err
	}
	return k.move("unpack", dst, src, false)
}

func (k *Kernels) move(op string, dst, src *devarray.DevArray, pack bool) error {
	if err := k.check(op, dst, true); err != nil {
		return err
	}
	if err := k.check(op, src, false); err != nil {
		return err
	}
	if dst.DType() != src.DType() || !slices.Equal(dst.Shape(), src.Shape()) {
		return fmt.Errorf("kernels: %s: dst is %v %v, src is %v %v: want the same shape and dtype: %w",
			op, dst.Shape(), dst.DType(), src.Shape(), src.DType(), devarray.ErrShape)
	}
	if wideMove(dst, src) { // contiguous on both sides: 16-byte words (copy_wide)
		return k.copyWide(dst, src)
	}
	flat, strided := dst, src
	if !pack {
		flat, strided = src, dst
	}
	if !flat.IsContiguous() {
		return fmt.Errorf("kernels: %s: the packed side must be C-contiguous: %w", op, devarray.ErrNotViewable)
	}
	item := src.DType().Size()
	l, err := layoutOf(strided)
	if errors.Is(err, devarray.ErrShape) && strided.NDim() > MaxDims {
		return k.moveEach(op, dst, src, pack)
	}
	if err != nil || l.n == 0 {
		return err
	}
	// A layout not aligned to the item's loads (pack_16 moves two 8-byte
	// words) moves in narrower words: a complex64 view at an address ≡ 4
	// (mod 8), as NumPy and CuPy may hand over, moves as pairs of 4-byte
	// words. A misaligned load would fault the context on a GPU.
	if w := wordFor(l, item, strided.Ptr(), flat.Ptr()); w < min(item, 8) {
		l = l.split(item, w)
		item = w
		if len(l.shape) > MaxDims {
			if l = l.simplify(); len(l.shape) > MaxDims {
				return k.moveEach(op, dst, src, pack)
			}
		}
	}
	align := min(item, 8)
	if k.gpu == nil && (l.misaligned(strided.Ptr(), align) || misalignedPtr(flat.Ptr(), align)) {
		return devarray.Use(func() error {
			return k.misaligned(fmt.Sprintf("%s_%d: item of %d bytes at %v (strides %v) or %v", op, item, item, strided.Ptr(), l.strides, flat.Ptr()))
		}, dst, src)
	}
	return devarray.Use(func() error {
		if k.gpu != nil {
			name := fmt.Sprintf("%s_%d", op, item)
			if pack {
				return k.launch(name, l.n, kernel.Out(dst), kernel.In(src), kernel.Struct(l.encode(), 8))
			}
			return k.launch(name, l.n, kernel.Out(dst), kernel.Struct(l.encode(), 8), kernel.In(src))
		}
		// pack and unpack load each element once and store it once: the
		// bytes the PTX interpreter counts for them where they run from PTX
		moved := l.n * int64(item)
		return k.accessBytes(fmt.Sprintf("%s_%d", op, item), moved, moved, func(mem [][]byte, base []int64) error {
			if pack {
				refPack(mem[0][base[0]:], mem[1], base[1], l, item)
			} else {
				refUnpack(mem[0], base[0], l, mem[1][base[1]:], item)
			}
			return nil
		}, 1, dst, src)
	}, dst, src)
}

// moveEach is move for a strided side of more axes than a kernel's layout
// holds, even merged: one move per index of the first axis, each of one
// axis fewer. Only such layouts (more than MaxDims axes that do not merge)
// take more than one kernel launch.
func (k *Kernels) moveEach(op string, dst, src *devarray.DevArray, pack bool) error {
	for i := range dst.Shape()[0] {
		d, err := dst.Index(0, i)
		if err != nil {
			return err
		}
		s, err := src.Index(0, i)
		if err != nil {
			return err
		}
		if err := k.move(op, d, s, pack); err != nil {
			return err
		}
	}
	return nil
}
