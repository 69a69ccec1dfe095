//go:build cuda && cudalibs

package main

/*
#cgo LDFLAGS: -lcublas -lcufft -lcudart
#include <stdint.h>
#include <cublas_v2.h>
#include <cufft.h>
#include <cuda_runtime_api.h>

// The libraries take device addresses and streams as pointers; cuarray
// hands them over as integers (devarray.Ptr, Stream.Handle), cast here, in
// C, so that Go never makes a pointer of an integer.

static cublasStatus_t blas_set_stream(cublasHandle_t h, uintptr_t stream) {
	return cublasSetStream(h, (cudaStream_t)stream);
}

// sgemm_rowmajor computes C = A·B for row-major A (m×k, lda), B (k×n, ldb)
// and C (m×n, ldc): cuBLAS is column-major, and a row-major matrix is its
// transpose in column-major terms, so it computes Cᵀ = Bᵀ·Aᵀ.
static cublasStatus_t sgemm_rowmajor(cublasHandle_t h, int m, int n, int k,
		uintptr_t a, int lda, uintptr_t b, int ldb, uintptr_t c, int ldc) {
	const float one = 1, zero = 0;
	return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one,
		(const float *)b, ldb, (const float *)a, lda, &zero, (float *)c, ldc);
}

static cufftResult fft_set_stream(cufftHandle plan, uintptr_t stream) {
	return cufftSetStream(plan, (cudaStream_t)stream);
}

static cufftResult fft_forward_inplace(cufftHandle plan, uintptr_t data) {
	return cufftExecC2C(plan, (cufftComplex *)data, (cufftComplex *)data, CUFFT_FORWARD);
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

// ordinal is the GPU the example runs on: cuarray's cuda:0, the runtime's
// device 0.
const ordinal = 0

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cudalibs:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	dev, err := device.Open(fmt.Sprintf("cuda:%d", ordinal))
	if err != nil {
		return fmt.Errorf("%w (this example needs a GPU)", err)
	}
	defer func() { err = errors.Join(err, dev.Close()) }()
	// The libraries' calls run on this OS thread, with the device's
	// primary context current: cudaSetDevice makes it so, and it is the
	// context cuarray's arrays live in, so their addresses are valid there.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cudaErr("cudaSetDevice", C.cudaSetDevice(ordinal)); err != nil {
		return err
	}
	s, err := dev.NewStream()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.Close()) }()
	if err := gemm(dev, s); err != nil {
		return err
	}
	if err := fft(dev, s); err != nil {
		return err
	}
	// cuarray counted the arrays and the explicit copies (FromHost,
	// ToHost); the libraries' kernels are theirs, not in the ledger.
	fmt.Print(dev.Ledger().Report())
	return nil
}

// gemm multiplies two random matrices with cuBLAS on stream s, in place
// in cuarray's arrays, and checks the product against Go.
func gemm(dev device.Device, s device.Stream) (err error) {
	const m, n, k = 64, 48, 80
	ah, bh := random(m*k), random(k*n)
	a, err := devarray.FromHost(dev, ah, m, k)
	if err != nil {
		return err
	}
	// Every deferred Free runs after the Synchronize below: the library's
	// work is asynchronous on s and cuarray does not see it, so the arrays
	// must stay allocated until s has finished it.
	defer func() { err = errors.Join(err, a.Free()) }()
	b, err := devarray.FromHost(dev, bh, k, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Free()) }()
	c, err := devarray.Empty(dev, devarray.Float32, m, n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Free()) }()
	lda, err := leading(a)
	if err != nil {
		return err
	}
	ldb, err := leading(b)
	if err != nil {
		return err
	}
	ldc, err := leading(c)
	if err != nil {
		return err
	}

	var h C.cublasHandle_t
	if err := blasErr("cublasCreate", C.cublasCreate(&h)); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, blasErr("cublasDestroy", C.cublasDestroy(h))) }()
	if err := blasErr("cublasSetStream", C.blas_set_stream(h, C.uintptr_t(s.Handle()))); err != nil {
		return err
	}
	if err := blasErr("cublasSgemm", C.sgemm_rowmajor(h, m, n, k,
		C.uintptr_t(a.Ptr()), C.int(lda), C.uintptr_t(b.Ptr()), C.int(ldb),
		C.uintptr_t(c.Ptr()), C.int(ldc))); err != nil {
		return err
	}
	// Queued, not done: cuarray's own calls on c would not wait for it.
	if err := s.Synchronize(); err != nil {
		return fmt.Errorf("after cublasSgemm: %w", err)
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
		return fmt.Errorf("SGEMM differs from the Go reference: relative error %.2g, over 1e-4", worst)
	}
	return nil
}

// leading returns the leading dimension, in elements, that cuBLAS takes
// for a, a row-major float32 matrix, from a's descriptor: its row stride.
// A layout whose elements are not adjacent in a row (a permuted view)
// would need a transposed operation or a copy first; this example refuses it.
func leading(a *devarray.DevArray) (int, error) {
	d, err := a.Descriptor()
	if err != nil {
		return 0, err
	}
	size := d.DType.Size()
	if d.DType != devarray.Float32 || len(d.Shape) != 2 || d.Strides[1] != size || d.Strides[0]%size != 0 {
		return 0, fmt.Errorf("want a row-major float32 matrix, have %v shape %v strides %v", d.DType, d.Shape, d.Strides)
	}
	return int(d.Strides[0] / size), nil
}

// fft transforms a random complex signal with cuFFT on stream s, in place
// in a cuarray array, and checks it against a Go DFT.
func fft(dev device.Device, s device.Stream) (err error) {
	const n = 1024
	xh := make([]complex64, n)
	for i := range xh {
		xh[i] = complex(rand.Float32()-0.5, rand.Float32()-0.5)
	}
	x, err := devarray.FromHost(dev, xh)
	if err != nil {
		return err
	}
	// As in gemm: x stays allocated, and the plan (its work area) alive,
	// until s has finished the transform.
	defer func() { err = errors.Join(err, x.Free()) }()
	var plan C.cufftHandle
	if err := fftErr("cufftPlan1d", C.cufftPlan1d(&plan, n, C.CUFFT_C2C, 1)); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, fftErr("cufftDestroy", C.cufftDestroy(plan))) }()
	if err := fftErr("cufftSetStream", C.fft_set_stream(plan, C.uintptr_t(s.Handle()))); err != nil {
		return err
	}
	if err := fftErr("cufftExecC2C", C.fft_forward_inplace(plan, C.uintptr_t(x.Ptr()))); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return fmt.Errorf("after cufftExecC2C: %w", err)
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
	fmt.Printf("cuFFT C2C of %d points in place on stream %#x: largest error %.2g of %.3g (relative %.2g)\n",
		n, s.Handle(), worst, scale, worst/scale)
	if worst > 1e-3*scale {
		return fmt.Errorf("the FFT differs from the Go DFT: relative error %.2g, over 1e-3", worst/scale)
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

// cudaErr names a failed CUDA runtime call.
func cudaErr(call string, e C.cudaError_t) error {
	if e == C.cudaSuccess {
		return nil
	}
	return fmt.Errorf("%s: %s (%d): %s", call, C.GoString(C.cudaGetErrorName(e)), int(e), C.GoString(C.cudaGetErrorString(e)))
}

// blasErr names a failed cuBLAS call.
func blasErr(call string, s C.cublasStatus_t) error {
	if s == C.CUBLAS_STATUS_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: %s (%d)", call, C.GoString(C.cublasGetStatusName(s)), int(s))
}

// fftResults names cuFFT's results (cufft.h); cuFFT has no function for it.
var fftResults = map[C.cufftResult]string{
	C.CUFFT_INVALID_PLAN: "CUFFT_INVALID_PLAN", C.CUFFT_ALLOC_FAILED: "CUFFT_ALLOC_FAILED",
	C.CUFFT_INVALID_TYPE: "CUFFT_INVALID_TYPE", C.CUFFT_INVALID_VALUE: "CUFFT_INVALID_VALUE",
	C.CUFFT_INTERNAL_ERROR: "CUFFT_INTERNAL_ERROR", C.CUFFT_EXEC_FAILED: "CUFFT_EXEC_FAILED",
	C.CUFFT_SETUP_FAILED: "CUFFT_SETUP_FAILED", C.CUFFT_INVALID_SIZE: "CUFFT_INVALID_SIZE",
	C.CUFFT_UNALIGNED_DATA: "CUFFT_UNALIGNED_DATA", C.CUFFT_INVALID_DEVICE: "CUFFT_INVALID_DEVICE",
	C.CUFFT_NO_WORKSPACE: "CUFFT_NO_WORKSPACE", C.CUFFT_NOT_IMPLEMENTED: "CUFFT_NOT_IMPLEMENTED",
	C.CUFFT_NOT_SUPPORTED: "CUFFT_NOT_SUPPORTED",
}

// fftErr names a failed cuFFT call.
func fftErr(call string, r C.cufftResult) error {
	if r == C.CUFFT_SUCCESS {
		return nil
	}
	name, ok := fftResults[r]
	if !ok {
		name = "cufftResult"
	}
	return fmt.Errorf("%s: %s (%d)", call, name, int(r))
}
