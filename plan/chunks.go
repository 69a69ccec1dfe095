package plan

import (
	"errors"
	"fmt"
	"math"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrTooLarge: not even one slice of the job fits in the memory available,
// or the job would need more than MaxChunks chunks.
var ErrTooLarge = errors.New("not even one slice fits")

// ErrNil: a nil Method, device or Registry, or a nil function. It wraps
// accounting.ErrInvalidArgument.
var ErrNil = fmt.Errorf("plan: nil method, device, registry or function: %w", accounting.ErrInvalidArgument)

// ErrParam: a method parameter the method does not take, or a value out of
// its range. Methods wrap it; it wraps accounting.ErrInvalidArgument.
var ErrParam = fmt.Errorf("plan: bad method parameter: %w", accounting.ErrInvalidArgument)

// MaxChunks is the most chunks a plan has: a job that would need more
// (billions of slices in a few bytes) is refused with ErrTooLarge.
const MaxChunks = 1 << 20

// Chunk is a run of slices [Start, Start+Len) along the slice axis.
type Chunk struct {
	Start int `json:"start"`
	Len   int `json:"len"`
}

// Plan is a job split into chunks that each fit.
type Plan struct {
	Method    string         `json:"method"`
	Shape     [3]int         `json:"shape"`
	SliceDim  int            `json:"slice_axis"`
	DType     devarray.DType `json:"dtype"`
	Available int64          `json:"available_bytes"`     // the device bytes the plan was made for
	Overhead  float64        `json:"overhead"`            // the factor Available was divided by
	MaxSlices int            `json:"max_slices"`          // the estimator's answer for Available/Overhead
	Chunks    []Chunk        `json:"chunks"`              // in order, covering every slice once, as even as can be
	OutDType  devarray.DType `json:"out_dtype,omitempty"` // absent when the method refused the job
	Raw       bool           `json:"raw"`                 // planned in Raw mode: bytes unrounded, overhead 1
	Terms     []Term         `json:"terms,omitempty"`     // a raw plan's allocations, as bytes per slice and fixed bytes
}

// Explain says in one line what the plan is and why; a raw plan shows
// its arithmetic, as httomo's example does: input 800 + output 800 = 1600
// bytes per slice; 14450 // 1600 = 9 slices.
func (p Plan) Explain() string {
	if p.Raw {
		return p.explainRaw()
	}
	return fmt.Sprintf("%s on %v %v along axis %d: %s of at most %s (%s available / overhead %.2f fits %s)",
		p.Method, p.Shape, p.DType, p.SliceDim, count(len(p.Chunks), "chunk"), count(p.largest(), "slice"), accounting.FormatBytes(p.Available), p.Overhead, count(p.MaxSlices, "slice"))
}

func (p Plan) largest() int {
	n := 0
	for _, c := range p.Chunks {
		n = max(n, c.Len)
	}
	return n
}

// Chunks plans method m on a 3-D array of shape, sliced along sliceDim,
// within available device bytes divided by overhead (at least 1). The
// chunks are as even as possible: 10 slices with room for 4 become 4, 3, 3.
// A shape whose bytes do not fit in int64 is ErrOverflow (package devarray).
func Chunks(m Method, shape [3]int, sliceDim int, dtype devarray.DType, params Params, available int64, overhead float64) (Plan, error) {
	return chunks(m, Device, shape, sliceDim, dtype, params, available, overhead)
}

// ChunksRaw plans m as Chunks does, in httomo's convention (Raw mode):
// the bytes of every allocation as the arrays hold them, unrounded, and
// no overhead factor. m must be a Model (else ErrNoModel); the plan's
// Terms and Explain show the arithmetic.
func ChunksRaw(m Method, shape [3]int, sliceDim int, dtype devarray.DType, params Params, available int64) (Plan, error) {
	return chunks(m, Raw, shape, sliceDim, dtype, params, available, 1)
}

func chunks(m Method, mode Mode, shape [3]int, sliceDim int, dtype devarray.DType, params Params, available int64, overhead float64) (Plan, error) {
	if m == nil {
		return Plan{}, fmt.Errorf("plan: chunks: no method: %w", ErrNil)
	}
	p := Plan{Method: m.Name(), Shape: shape, SliceDim: sliceDim, DType: dtype, Available: available, Overhead: overhead, Raw: mode == Raw}
	other, err := otherDims(shape, sliceDim)
	if err != nil {
		return p, err
	}
	if !(overhead >= 1) || available < 0 {
		return p, fmt.Errorf("plan: %d bytes available with overhead %v: %w", available, overhead, accounting.ErrInvalidArgument)
	}
	for _, d := range shape {
		if d < 0 {
			return p, fmt.Errorf("plan: shape %v: %w", shape, devarray.ErrShape)
		}
	}
	if _, err := accounting.EstimateBytes(shape[:], dtype); err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	// To the byte: 33 KiB / 1.1 is 30 KiB, not a byte less. MaxInt64 as a
	// float64 is 2^63, one past int64: it stays MaxInt64.
	usable := int64(math.MaxInt64)
	if u := math.Round(float64(available) / overhead); u < math.MaxInt64 {
		usable = int64(u)
	}
	s, out, err := Estimate(m, mode, sliceDim, other, dtype, usable, params)
	if err != nil {
		return p, fmt.Errorf("plan: %s: %w", m.Name(), err)
	}
	p.MaxSlices, p.OutDType = s, out
	if model, ok := m.(Model); ok && mode == Raw {
		if terms, linear, err := Terms(model, sliceDim, other, dtype, params); err == nil && linear {
			p.Terms = terms
		}
	}
	total := shape[sliceDim]
	if total == 0 {
		return p, nil
	}
	if s < 1 {
		return p, fmt.Errorf("plan: %s on slices of %v %v: %s usable (%s / %.2f): %w",
			m.Name(), other, dtype, accounting.FormatBytes(usable), accounting.FormatBytes(available), overhead, ErrTooLarge)
	}
	n := (total-1)/s + 1 // chunks needed
	if n > MaxChunks {
		return p, fmt.Errorf("plan: %s: %d slices of %v %v, %d at a time, would take %d chunks, more than %d: %w",
			m.Name(), total, other, dtype, s, n, MaxChunks, ErrTooLarge)
	}
	base, extra := total/n, total%n
	start := 0
	for i := range n {
		l := base
		if i < extra {
			l++
		}
		p.Chunks = append(p.Chunks, Chunk{Start: start, Len: l})
		start += l
	}
	return p, nil
}

// ForDevice plans m on dev: the memory available is what dev's ledger
// reports (the device's free memory, and the room under its Device limit),
// and the overhead is the ledger's.
func ForDevice(dev driver.Device, m Method, shape [3]int, sliceDim int, dtype devarray.DType, params Params) (Plan, error) {
	return forDevice(dev, m, Device, shape, sliceDim, dtype, params)
}

// ForDeviceRaw plans m on dev in Raw mode (ChunksRaw): the memory
// available is what dev's ledger reports, with no overhead factor.
func ForDeviceRaw(dev driver.Device, m Method, shape [3]int, sliceDim int, dtype devarray.DType, params Params) (Plan, error) {
	return forDevice(dev, m, Raw, shape, sliceDim, dtype, params)
}

func forDevice(dev driver.Device, m Method, mode Mode, shape [3]int, sliceDim int, dtype devarray.DType, params Params) (Plan, error) {
	if dev == nil || m == nil {
		return Plan{}, fmt.Errorf("plan: for device: no device or method: %w", ErrNil)
	}
	led := dev.Ledger()
	avail, err := led.Available()
	if err != nil {
		return Plan{Method: m.Name()}, fmt.Errorf("plan: %w", err)
	}
	if mode == Raw {
		return ChunksRaw(m, shape, sliceDim, dtype, params, avail)
	}
	return Chunks(m, shape, sliceDim, dtype, params, avail, led.Overhead())
}
