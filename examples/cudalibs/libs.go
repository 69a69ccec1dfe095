//go:build cuda && cudalibs

package main

/*
#cgo LDFLAGS: -lcublas -lcufft -lcudart
#include <stdint.h>
#include <cublas_v2.h>
#include <cufft.h>
#include <cuda_runtime_api.h>

// The libraries take device addresses and streams as pointers; cuarray
// hands them over as integers (devarray.Ptr, Stream.Handle).
static int use_device(int ordinal) { return (int)cudaSetDevice(ordinal); }

static int blas_create(cublasHandle_t *h, uintptr_t stream) {
	cublasStatus_t s = cublasCreate(h);
	if (s != CUBLAS_STATUS_SUCCESS) return (int)s;
	return (int)cublasSetStream(*h, (cudaStream_t)stream);
}

// sgemm_rowmajor computes C = A·B for row-major A (m×k), B (k×n) and C
// (m×n): cuBLAS is column-major, so it computes Cᵀ = Bᵀ·Aᵀ.
static int sgemm_rowmajor(cublasHandle_t h, int m, int n, int k, uintptr_t a, uintptr_t b, uintptr_t c) {
	const float one = 1, zero = 0;
	return (int)cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
		(const float *)b, n, (const float *)a, k, &zero, (float *)c, n);
}

static int fft_forward(int n, uintptr_t data, uintptr_t stream) {
	cufftHandle plan;
	cufftResult r = cufftPlan1d(&plan, n, CUFFT_C2C, 1);
	if (r != CUFFT_SUCCESS) return (int)r;
	r = cufftSetStream(plan, (cudaStream_t)stream);
	if (r == CUFFT_SUCCESS) r = cufftExecC2C(plan, (cufftComplex *)data, (cufftComplex *)data, CUFFT_FORWARD);
	cufftDestroy(plan);
	return (int)r;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"os"
	"runtime"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cudalibs:", err)
		os.Exit(1)
	}
}

func run() error {
	dev, err := device.Open("cuda:0")
	if err != nil {
		return fmt.Errorf("%w (this example needs a GPU)", err)
	}
	defer dev.Close()
	// The libraries' calls run on this OS thread, with the device's
	// primary context current: cudaSetDevice makes it so, and it is the
	// context cuarray's arrays live in.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := C.use_device(0); r != 0 {
		return fmt.Errorf("cudaSetDevice: error %d", r)
	}
	s, err := dev.NewStream()
	if err != nil {
		return err
	}
	defer s.Close()
	if err := gemm(dev, s); err != nil {
		return err
	}
	if err := fft(dev, s); err != nil {
		return err
	}
	// cuarray counted the arrays and the copies; the libraries' kernels
	// are theirs, not in the ledger.
	fmt.Print(dev.Ledger().Report())
	return nil
}

// gemm multiplies two random matrices with cuBLAS on stream s, in place
// in cuarray's arrays, and checks the product against Go.
func gemm(dev device.Device, s device.Stream) error {
	const m, n, k = 64, 48, 80
	ah, bh := random(m*k), random(k*n)
	a, err := devarray.FromHost(dev, ah, m, k)
	if err != nil {
		return err
	}
	defer a.Free()
	b, err := devarray.FromHost(dev, bh, k, n)
	if err != nil {
		return err
	}
	defer b.Free()
	c, err := devarray.Empty(dev, devarray.Float32, m, n)
	if err != nil {
		return err
	}
	defer c.Free()
	var h C.cublasHandle_t
	if r := C.blas_create(&h, C.uintptr_t(s.Handle())); r != 0 {
		return fmt.Errorf("cublasCreate/cublasSetStream: status %d", r)
	}
	defer C.cublasDestroy(h)
	// The call is asynchronous on s: a, b and c must stay allocated (the
	// deferred Frees run after the Synchronize below).
	if r := C.sgemm_rowmajor(h, m, n, k, C.uintptr_t(a.Ptr()), C.uintptr_t(b.Ptr()), C.uintptr_t(c.Ptr())); r != 0 {
		return fmt.Errorf("cublasSgemm: status %d", r)
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	got, err := devarray.ToHost[float32](c)
	if err != nil {
		return err
	}
	worst := 0.0
	for i := range m {
		for j := range n {
			var want float64
			for l := range k {
				want += float64(ah[i*k+l]) * float64(bh[l*n+j])
			}
			worst = max(worst, math.Abs(float64(got[i*n+j])-want)/max(math.Abs(want), 1))
		}
	}
	fmt.Printf("cuBLAS SGEMM %d×%d·%d×%d on stream %#x: largest relative error %.2g\n", m, k, k, n, s.Handle(), worst)
	if worst > 1e-4 {
		return errors.New("SGEMM differs from the Go reference")
	}
	return nil
}

// fft transforms a random complex signal with cuFFT on stream s, in place
// in a cuarray array, and checks it against a Go DFT.
func fft(dev device.Device, s device.Stream) error {
	const n = 1024
	xh := make([]complex64, n)
	for i := range xh {
		xh[i] = complex(rand.Float32()-0.5, rand.Float32()-0.5)
	}
	x, err := devarray.FromHost(dev, xh)
	if err != nil {
		return err
	}
	defer x.Free()
	if r := C.fft_forward(n, C.uintptr_t(x.Ptr()), C.uintptr_t(s.Handle())); r != 0 {
		return fmt.Errorf("cufftPlan1d/cufftSetStream/cufftExecC2C: result %d", r)
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	got, err := devarray.ToHost[complex64](x)
	if err != nil {
		return err
	}
	worst, scale := 0.0, 0.0
	for f := range n {
		var want complex128
		for t, v := range xh {
			want += complex128(v) * cmplx.Exp(complex(0, -2*math.Pi*float64(f*t%n)/n))
		}
		scale = max(scale, cmplx.Abs(want))
		worst = max(worst, cmplx.Abs(complex128(got[f])-want))
	}
	fmt.Printf("cuFFT C2C of %d points in place on stream %#x: largest error %.2g of %.3g\n", n, s.Handle(), worst, scale)
	if worst > 1e-3*scale {
		return errors.New("the FFT differs from the Go reference")
	}
	return nil
}

// random returns n floats in [-1, 1).
func random(n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = rand.Float32()*2 - 1
	}
	return out
}
