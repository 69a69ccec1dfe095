package main

/*
#include <stdint.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unsafe"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	_ "github.com/cuarray/cuarray/kernels" // registers the kernels' and FBP's methods
	"github.com/cuarray/cuarray/plan"
)

// Planning and scopes, for Python's cuarray.plan and cuarray.testing:
//
//	cuarray_plan_max_slices(request_json, &json)  httomo's calc_max_slices, by the Go planner
//	cuarray_plan_methods(&json)                   the methods it knows, as a JSON array
//	cuarray_scope_push(dev, name, &scope)         a ledger scope on the device (every allocation
//	                                              on it, CuPy's and PyTorch's through the allocator too)
//	cuarray_scope_pop(scope, &json)               end it: its counts, as the ledger's JSON
//
// A request names a registered method, or gives a memory model as terms
// (bytes per slice and fixed bytes per allocation):
//
//	{"method": "identity", "slice_dim": 0, "other_dims": [10, 20], "dtype": "float32",
//	 "available_memory": 14450, "raw": true, "params": {"size": 512}}
//	{"terms": [{"name": "input", "per_slice_bytes": 800, "fixed_bytes": 0}], "dtype": "float32",
//	 "out_dtype": "float32", "available_memory": 14450, "raw": true}
//
// and the answer is {"max_slices": 9, "out_dtype": "float32", "arithmetic":
// "input 800 + output 800 = 1600 bytes per slice; 14450 // 1600 = 9 slices"}
// (arithmetic in raw mode, where the allocations are lines in the number
// of slices). A request the planner cannot take (an unknown method, a
// dtype, axis or parameter the method refuses, a malformed request) is
// an error whose message starts with "bad request: ".

// planRequest is the JSON of cuarray_plan_max_slices.
type planRequest struct {
	Method    string         `json:"method"`
	Terms     []plan.Term    `json:"terms"`
	SliceDim  int            `json:"slice_dim"`
	OtherDims []int          `json:"other_dims"`
	DType     string         `json:"dtype"`
	OutDType  string         `json:"out_dtype"`
	Available *int64         `json:"available_memory"`
	Raw       bool           `json:"raw"`
	Params    map[string]int `json:"params"`
}

// planAnswer is its answer.
type planAnswer struct {
	MaxSlices  int    `json:"max_slices"`
	OutDType   string `json:"out_dtype"`
	Arithmetic string `json:"arithmetic,omitempty"`
}

// errBadRequest marks what the caller got wrong, as opposed to a failure.
var errBadRequest = errors.New("bad request")

// badRequest wraps err as the caller's mistake: "bad request: ...".
func badRequest(err error) error {
	return fmt.Errorf("%w: %w", errBadRequest, err)
}

// planMaxSlices answers a planRequest.
func planMaxSlices(req []byte) ([]byte, error) {
	var r planRequest
	d := json.NewDecoder(bytes.NewReader(req))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return nil, badRequest(fmt.Errorf("plan request: %v", err))
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, badRequest(errors.New("plan request: more than one JSON value"))
	}
	switch {
	case (r.Method == "") == (r.Terms == nil):
		return nil, badRequest(errors.New("plan request: want a method or terms, one of them"))
	case len(r.OtherDims) != 2:
		return nil, badRequest(fmt.Errorf("plan request: other_dims %v: want the two other axes' sizes", r.OtherDims))
	case r.Available == nil || *r.Available < 0:
		return nil, badRequest(errors.New("plan request: want available_memory, a number of bytes, at least 0"))
	case r.SliceDim < 0 || r.SliceDim > 2:
		return nil, badRequest(fmt.Errorf("plan request: slice_dim %d: want 0, 1 or 2", r.SliceDim))
	case r.OtherDims[0] < 0 || r.OtherDims[1] < 0:
		return nil, badRequest(fmt.Errorf("plan request: other_dims %v: want sizes of at least 0", r.OtherDims))
	}
	dtype, err := devarray.ParseDType(r.DType)
	if err != nil {
		return nil, badRequest(err)
	}
	mode := plan.Device
	if r.Raw {
		mode = plan.Raw
	}
	other := [2]int{r.OtherDims[0], r.OtherDims[1]}
	if r.Terms != nil {
		return termsAnswer(r, dtype, mode)
	}
	m, err := plan.Default.Lookup(r.Method)
	if err != nil {
		return nil, badRequest(err)
	}
	s, out, err := plan.Estimate(m, mode, r.SliceDim, other, dtype, *r.Available, plan.Params(r.Params))
	if err != nil {
		if errors.Is(err, plan.ErrNoModel) || errors.Is(err, accounting.ErrInvalidArgument) || errors.Is(err, devarray.ErrShape) ||
			errors.Is(err, devarray.ErrDType) || errors.Is(err, devarray.ErrOverflow) {
			return nil, badRequest(err)
		}
		return nil, err
	}
	a := planAnswer{MaxSlices: s, OutDType: out.String()}
	if model, ok := m.(plan.Model); ok && mode == plan.Raw {
		if terms, linear, err := plan.Terms(model, r.SliceDim, other, dtype, plan.Params(r.Params)); err == nil && linear {
			a.Arithmetic = plan.Plan{Raw: true, Available: *r.Available, MaxSlices: s, Terms: terms}.Arithmetic()
		}
	}
	return json.Marshal(a)
}

// termsAnswer answers a request that gives its memory model as terms.
func termsAnswer(r planRequest, dtype devarray.DType, mode plan.Mode) ([]byte, error) {
	out := dtype
	if r.OutDType != "" {
		var err error
		if out, err = devarray.ParseDType(r.OutDType); err != nil {
			return nil, badRequest(err)
		}
	}
	if len(r.Params) != 0 {
		return nil, badRequest(errors.New("plan request: params go to a method, not to terms"))
	}
	for _, t := range r.Terms {
		if t.PerSlice < 0 || t.Fixed < 0 {
			return nil, badRequest(fmt.Errorf("plan request: term %q: %d bytes per slice, %d fixed: want at least 0", t.Name, t.PerSlice, t.Fixed))
		}
	}
	s := plan.FitTerms(r.Terms, mode, *r.Available)
	a := planAnswer{MaxSlices: s, OutDType: out.String()}
	if mode == plan.Raw {
		a.Arithmetic = plan.Plan{Raw: true, Available: *r.Available, MaxSlices: s, Terms: r.Terms}.Arithmetic()
	}
	return json.Marshal(a)
}

// scope is a ledger scope handed to C.
type scope struct{ s *accounting.Scope }

// scopePush starts a scope named name on the device's ledger.
func scopePush(dev uint64, name string) (uint64, error) {
	d, err := deviceOf(dev)
	if err != nil {
		return 0, err
	}
	if d == nil {
		return 0, fmt.Errorf("scope push: no device: %w", errHandle)
	}
	return register(&scope{s: d.Ledger().Push(name)}), nil
}

// scopePop ends a scope and returns its counts as JSON. A scope that is
// not the innermost one keeps its handle (pop the inner ones first).
func scopePop(h uint64) ([]byte, error) {
	v, err := valueOf(h)
	if err != nil {
		return nil, err
	}
	sc, ok := v.(*scope)
	if !ok {
		return nil, fmt.Errorf("handle %d is not a scope: %w", h, errHandle)
	}
	snap, err := sc.s.Pop()
	if err != nil {
		return nil, err
	}
	if _, err := take(h); err != nil {
		return nil, err
	}
	return json.Marshal(snap)
}

// planMethods returns the registered methods' names as a JSON array.
func planMethods() ([]byte, error) { return json.Marshal(plan.Default.Names()) }

//export cuarray_plan_max_slices
func cuarray_plan_max_slices(request *C.char, out **C.char) *C.char {
	if msg := null("cuarray_plan_max_slices", "request, out", unsafe.Pointer(request), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := planMaxSlices([]byte(C.GoString(request)))
	return putString(out, b, err)
}

//export cuarray_plan_methods
func cuarray_plan_methods(out **C.char) *C.char {
	if msg := null("cuarray_plan_methods", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := planMethods()
	return putString(out, b, err)
}

//export cuarray_scope_push
func cuarray_scope_push(dev C.uint64_t, name *C.char, out *C.uint64_t) *C.char {
	if msg := null("cuarray_scope_push", "name, out", unsafe.Pointer(name), unsafe.Pointer(out)); msg != nil {
		return msg
	}
	h, err := scopePush(uint64(dev), C.GoString(name))
	*out = C.uint64_t(h)
	return result(err)
}

//export cuarray_scope_pop
func cuarray_scope_pop(h C.uint64_t, out **C.char) *C.char {
	if msg := null("cuarray_scope_pop", "out", unsafe.Pointer(out)); msg != nil {
		return msg
	}
	b, err := scopePop(uint64(h))
	return putString(out, b, err)
}
