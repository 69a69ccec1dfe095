package plan

import (
	"errors"
	"fmt"
	"math"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// Mode is how an estimate counts the bytes of a run.
type Mode int

const (
	// Device counts what the device takes: every allocation rounded up to
	// accounting.Granularity, at least one granule, and plans divide the
	// memory available by an overhead factor. It is the default, and what
	// a Method's MaxSlices answers.
	Device Mode = iota
	// Raw counts bytes as the arrays hold them, with no rounding, and plans
	// use no overhead factor: httomo's convention, in which an input and an
	// output of 10×20 float32 per slice take 800 + 800 bytes, and 14450
	// bytes hold 14450 // 1600 = 9 slices. Only a Model can be estimated
	// in Raw mode.
	Raw
)

// String returns "device" or "raw".
func (m Mode) String() string {
	switch m {
	case Device:
		return "device"
	case Raw:
		return "raw"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ErrNoModel: a Raw estimate of a method that is not a Model: it says
// how many slices fit, but not which allocations make them up.
var ErrNoModel = errors.New("the method does not list its allocations (plan.Model), which raw mode needs")

// Alloc is one device allocation of a run: what it holds, and its size
// in bytes as the array holds them, before the device rounds it. -1 is a
// size past int64, which fits nowhere.
type Alloc struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

// Model is a Method that lists the allocations live at the peak of a
// run of a given number of slices, so that it can be estimated in either
// Mode. Its MaxSlices must be the Device estimate of those allocations
// (the built-in methods are checked to agree).
type Model interface {
	Method
	// Allocs returns the allocations live at the peak of a run of slices
	// slices along sliceDim whose two other axes are other, of dtype. A
	// dtype, axis or parameter the method does not take is an error.
	Allocs(sliceDim int, other [2]int, dtype devarray.DType, slices int64, params Params) ([]Alloc, error)
}

// Total returns the bytes allocs take in mode m: their sizes summed, each
// rounded up to the granule (at least one) in Device mode. It is -1 when a
// size or the sum is past int64, or a size is -1.
func Total(allocs []Alloc, m Mode) int64 {
	var t int64
	for _, a := range allocs {
		b := a.Bytes
		if b < 0 {
			return -1
		}
		if m != Raw {
			if b = accounting.AllocBytes(b); b < 0 {
				return -1
			}
		}
		if t > math.MaxInt64-b {
			return -1
		}
		t += b
	}
	return t
}

// Estimate answers MaxSlices for m in mode: in Device mode m's own
// MaxSlices; in Raw mode the most slices whose allocations, unrounded,
// fit in available bytes (ErrNoModel when m does not list them). The
// output dtype is m's either way.
func Estimate(m Method, mode Mode, sliceDim int, other [2]int, dtype devarray.DType, available int64, params Params) (int, devarray.DType, error) {
	if m == nil {
		return 0, dtype, fmt.Errorf("plan: estimate: no method: %w", ErrNil)
	}
	switch mode {
	case Device:
		return m.MaxSlices(sliceDim, other, dtype, available, params)
	case Raw:
	default:
		return 0, dtype, fmt.Errorf("plan: estimate in %v: %w", mode, accounting.ErrInvalidArgument)
	}
	model, ok := m.(Model)
	if !ok {
		return 0, dtype, fmt.Errorf("plan: %s: %w", m.Name(), ErrNoModel)
	}
	// MaxSlices checks the input and knows the output dtype.
	_, out, err := m.MaxSlices(sliceDim, other, dtype, 0, params)
	if err != nil {
		return 0, out, err
	}
	if _, err := model.Allocs(sliceDim, other, dtype, 1, params); err != nil {
		return 0, out, err
	}
	return MaxFit(available, func(s int64) int64 {
		a, err := model.Allocs(sliceDim, other, dtype, s, params)
		if err != nil {
			return -1
		}
		return Total(a, Raw)
	}), out, nil
}

// Term is one allocation of a Model as a line in the number of slices s:
// PerSlice*s + Fixed bytes, unrounded.
type Term struct {
	Name     string `json:"name"`
	PerSlice int64  `json:"per_slice_bytes"`
	Fixed    int64  `json:"fixed_bytes"`
}

// Terms returns m's allocations as lines in the number of slices, read
// from runs of 1 and 2 slices, and whether they are lines: checked at 3
// and 1000 slices, and every allocation of a run of 1 is non-negative.
// The terms are what a raw plan explains its answer with.
func Terms(m Model, sliceDim int, other [2]int, dtype devarray.DType, params Params) ([]Term, bool, error) {
	if m == nil {
		return nil, false, fmt.Errorf("plan: terms: no method: %w", ErrNil)
	}
	at := func(s int64) ([]Alloc, error) { return m.Allocs(sliceDim, other, dtype, s, params) }
	one, err := at(1)
	if err != nil {
		return nil, false, err
	}
	two, err := at(2)
	if err != nil {
		return nil, false, err
	}
	if len(one) != len(two) {
		return nil, false, nil
	}
	terms := make([]Term, len(one))
	linear := true
	for i := range one {
		per := two[i].Bytes - one[i].Bytes
		terms[i] = Term{Name: one[i].Name, PerSlice: per, Fixed: one[i].Bytes - per}
		linear = linear && one[i].Bytes >= 0 && two[i].Bytes >= one[i].Bytes && one[i].Name == two[i].Name
	}
	for _, s := range []int64{3, 1000} {
		a, err := at(s)
		if err != nil || len(a) != len(terms) {
			return terms, false, err
		}
		for i, t := range terms {
			if t.PerSlice > 0 && s > (math.MaxInt64-t.Fixed)/t.PerSlice {
				return terms, false, nil
			}
			linear = linear && a[i].Bytes == t.PerSlice*s+t.Fixed
		}
	}
	return terms, linear, nil
}

// sums returns the bytes per slice and the fixed bytes of terms, and
// false when either is past int64.
func sums(terms []Term) (per, fixed int64, ok bool) {
	for _, t := range terms {
		if t.PerSlice < 0 || t.Fixed < 0 || per > math.MaxInt64-t.PerSlice || fixed > math.MaxInt64-t.Fixed {
			return 0, 0, false
		}
		per += t.PerSlice
		fixed += t.Fixed
	}
	return per, fixed, true
}

// FitTerms returns the most slices whose allocations, terms at that many
// slices, fit in available bytes in mode: the estimate of a memory model
// described as lines (a Python function's bytes per slice and fixed
// bytes) rather than by a Method. A negative term fits nothing.
func FitTerms(terms []Term, mode Mode, available int64) int {
	for _, t := range terms {
		if t.PerSlice < 0 || t.Fixed < 0 {
			return 0
		}
	}
	allocs := make([]Alloc, len(terms))
	return MaxFit(available, func(s int64) int64 {
		for i, t := range terms {
			allocs[i] = Alloc{Name: t.Name, Bytes: -1}
			if t.PerSlice == 0 || s <= (math.MaxInt64-t.Fixed)/t.PerSlice {
				allocs[i].Bytes = t.PerSlice*s + t.Fixed
			}
		}
		return Total(allocs, mode)
	})
}
