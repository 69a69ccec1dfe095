// Command ownkernels runs two kernels of one's own on cuarray's arrays,
// in place, and checks each against a Go reference: a SAXPY (saxpy.cu)
// and a 5-point Laplacian that stages 16×16 tiles and their halo in
// shared memory (stencil.cu). The PTX beside each .cu is what nvcc made
// of it (make example-ptx), embedded here; on a GPU the driver compiles
// it, on sim and the emulated driver cuarray's PTX interpreter runs it,
// checking every access. It prints what each kernel did and the ledger's
// count of launches per kernel. Copy this directory to start your own.
//
//	go run ./examples/ownkernels                  # sim:0, or cuda:0 in a -tags cuda build with a GPU
//	go run ./examples/ownkernels -device sim:0 -n 100000 -size 300
package main

import (
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"os"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/kernel"
)

//go:embed saxpy.ptx
var saxpyPTX string

//go:embed stencil.ptx
var stencilPTX string

// tile is the stencil's block edge: TILE in stencil.cu.
const tile = 16

func main() {
	spec := flag.String("device", "", `the device: "" for cuda:0 in a -tags cuda build with a GPU, else sim:0`)
	n := flag.Int("n", 1<<16, "SAXPY's elements")
	size := flag.Int("size", 256, "the stencil's image edge, in pixels")
	seed := flag.Uint64("seed", 1, "the random data's seed")
	flag.Parse()
	dev, err := device.Open(*spec)
	if err == nil {
		err = errors.Join(run(os.Stdout, dev, *n, *size, *seed), dev.Close())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ownkernels:", err)
		os.Exit(1)
	}
}

// run runs both kernels on dev on random data from seed, compares them
// with their Go references and prints what they did.
func run(w io.Writer, dev device.Device, n, size int, seed uint64) error {
	if n < 1 || size < 1 {
		return fmt.Errorf("-n %d and -size %d must be at least 1", n, size)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	if err := runSaxpy(w, dev, n, rng); err != nil {
		return fmt.Errorf("saxpy: %w", err)
	}
	if err := runStencil(w, dev, size, rng); err != nil {
		return fmt.Errorf("laplacian: %w", err)
	}
	for _, k := range dev.Ledger().Snapshot().Kernels {
		fmt.Fprintf(w, "ledger: %s launched %d time(s)", k.Name, k.Launches)
		if k.Measured > 0 {
			fmt.Fprintf(w, ", read %d bytes, wrote %d", k.Read, k.Written)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// runSaxpy computes y = a*x + y on the device and compares it with Go.
func runSaxpy(w io.Writer, dev device.Device, n int, rng *rand.Rand) error {
	mod, err := kernel.Load(dev, saxpyPTX)
	if err != nil {
		return err
	}
	defer mod.Close()
	saxpy, err := mod.Kernel("saxpy")
	if err != nil {
		return err
	}
	xs, ys := random(rng, n), random(rng, n)
	a := float32(2.5)
	x, err := devarray.FromHost(dev, xs)
	if err != nil {
		return err
	}
	defer x.Free()
	y, err := devarray.FromHost(dev, ys)
	if err != nil {
		return err
	}
	defer y.Free()
	// x is only read (In), y read and written (InOut): the launch is
	// checked against that, and on sim and the emulated driver so is the
	// kernel.
	err = saxpy.Launch(kernel.Grid1D(int64(n), 256),
		kernel.F32(a), kernel.In(x).Of(devarray.Float32), kernel.InOut(y).Of(devarray.Float32), kernel.I32(int32(n)))
	if err != nil {
		return err
	}
	got, err := devarray.ToHost[float32](y)
	if err != nil {
		return err
	}
	for i := range got {
		if want := fma32(a, xs[i], ys[i]); got[i] != want {
			return fmt.Errorf("y[%d] = %v, the Go reference says %v", i, got[i], want)
		}
	}
	fmt.Fprintf(w, "saxpy: %d elements on %v, equal to the Go reference bit for bit\n", n, dev.DeviceID())
	return nil
}

// runStencil computes the Laplacian of a size×size image on the device
// and compares it with Go.
func runStencil(w io.Writer, dev device.Device, size int, rng *rand.Rand) error {
	mod, err := kernel.Load(dev, stencilPTX)
	if err != nil {
		return err
	}
	defer mod.Close()
	lap, err := mod.Kernel("laplacian")
	if err != nil {
		return err
	}
	img := random(rng, size*size)
	in, err := devarray.FromHost(dev, img, size, size)
	if err != nil {
		return err
	}
	defer in.Free()
	out, err := devarray.Empty(dev, devarray.Float32, size, size)
	if err != nil {
		return err
	}
	defer out.Free()
	// One 16×16 block a tile, with (16+2)² floats of dynamic shared memory
	// for the tile and its halo.
	cfg := kernel.Tiles2D(int64(size), int64(size), tile, tile).WithShared((tile + 2) * (tile + 2) * 4)
	err = lap.Launch(cfg, kernel.In(in).Contiguous(), kernel.Out(out).Contiguous(), kernel.I32(int32(size)), kernel.I32(int32(size)))
	if err != nil {
		return err
	}
	got, err := devarray.ToHost[float32](out)
	if err != nil {
		return err
	}
	want := laplacian(img, size, size)
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("pixel (%d, %d) = %v, the Go reference says %v", i/size, i%size, got[i], want[i])
		}
	}
	fmt.Fprintf(w, "laplacian: %d×%d image in %d×%d blocks on %v, equal to the Go reference bit for bit\n",
		size, size, cfg.Grid[0], cfg.Grid[1], dev.DeviceID())
	return nil
}

// random returns n floats in [-8, 8).
func random(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = rng.Float32()*16 - 8
	}
	return out
}

// fma32 is what the kernel's fma.rn.f32 computes (nvcc contracts a*x + y
// into one fused multiply-add): a*x + y rounded once to float32.
func fma32(a, x, y float32) float32 {
	p := new(big.Float).SetPrec(256).SetFloat64(float64(a))
	p.Mul(p, new(big.Float).SetFloat64(float64(x)))
	p.Add(p, new(big.Float).SetFloat64(float64(y)))
	f, _ := p.Float32()
	return f
}

// laplacian is the stencil's Go reference, adding in the kernel's order:
// ((up + down) + left) + right - 4·centre, pixels outside the image 0.
func laplacian(img []float32, h, w int) []float32 {
	at := func(r, c int) float32 {
		if r < 0 || r >= h || c < 0 || c >= w {
			return 0
		}
		return img[r*w+c]
	}
	out := make([]float32, h*w)
	for r := range h {
		for c := range w {
			s := at(r-1, c) + at(r+1, c)
			s += at(r, c-1)
			s += at(r, c+1)
			out[r*w+c] = s + -4*at(r, c)
		}
	}
	return out
}
