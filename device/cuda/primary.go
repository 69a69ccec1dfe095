//go:build cuda

package cuda

import (
	"fmt"
	"runtime"

	"gorgonia.org/cu"
)

// retainPrimary retains GPU dev's primary context, able to map host memory.
//
// CU_CTX_MAP_HOST is implicit on a primary context (CUDA documents
// cudaDeviceMapHost as implicit for the runtime, which uses it), and
// cuDevicePrimaryCtxSetFlags does not take the flag: on the H100 with
// driver 580 (2026-11-23) every call with it returned
// CUDA_ERROR_INVALID_VALUE, and cuCtxGetFlags reported map_host all the
// same. cuDevicePrimaryCtxGetState returns only the flags set through
// cuDevicePrimaryCtxSetFlags (gorgonia's PrimaryCtxState binds it
// correctly), so the flag is missing there even when the context has it:
// checking those flags alone set it on every Open, an API error that
// compute-sanitizer reports each time.
//
// And since CUDA 11.0 the flag "is deprecated ... and no longer has any
// effect; all contexts behave as though the flag is enabled" (cuda.h): a
// driver need not report it at all. So with a driver of CUDA 11.0 or newer
// retainPrimary only retains the context, and mapped memory does not
// depend on the flag (mapHostImplicit).
//
// With an older driver it reads the state, retains the context and asks
// the context itself (cuCtxGetFlags). Only when the context lacks MAP_HOST
// and was inactive before (no one else holds it) does it release the
// context, set the flag while the context is inactive, and retain it again;
// a refusal there is not fatal (Info reports the flags). It never sets
// flags on an active context.
func retainPrimary(dev cu.Device) (cu.CUContext, error) {
	if mapHostImplicit() {
		ctx, err := dev.RetainPrimaryCtx()
		if err != nil {
			return cu.CUContext{}, fmt.Errorf("retain primary context: %w", fromCu(err))
		}
		return ctx, nil
	}
	flags, active, err := dev.PrimaryCtxState()
	if err != nil {
		return cu.CUContext{}, fmt.Errorf("primary context state: %w", fromCu(err))
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return cu.CUContext{}, fmt.Errorf("retain primary context: %w", fromCu(err))
	}
	if active != 0 || flags&cu.MapHost != 0 {
		return ctx, nil
	}
	has, err := canMapHost(ctx)
	if err != nil {
		dev.ReleasePrimaryCtx()
		return cu.CUContext{}, fmt.Errorf("primary context flags: %w", err)
	}
	if has {
		return ctx, nil
	}
	if err := dev.ReleasePrimaryCtx(); err != nil {
		return cu.CUContext{}, fmt.Errorf("release primary context: %w", fromCu(err))
	}
	if flags, active, err = dev.PrimaryCtxState(); err == nil && active == 0 {
		_ = dev.SetPrimaryCtxFlags(flags | cu.MapHost)
	}
	ctx, err = dev.RetainPrimaryCtx()
	if err != nil {
		return cu.CUContext{}, fmt.Errorf("retain primary context: %w", fromCu(err))
	}
	return ctx, nil
}

// canMapHost reports whether ctx has CU_CTX_MAP_HOST (cuCtxGetFlags).
func canMapHost(ctx cu.CUContext) (bool, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return false, fromCu(err)
	}
	f, c := ctxFlags()
	if err := check(c); err != nil {
		return false, err
	}
	return f&uint32(cu.MapHost) != 0, nil
}

// mapHostImplicit reports whether the driver maps host memory for every
// context, CU_CTX_MAP_HOST or not: every driver of CUDA 11.0 or newer.
func mapHostImplicit() bool { return cu.Version() >= 11000 }
