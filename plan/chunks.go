package plan

import (
	"errors"
	"fmt"
	"math"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrTooLarge: not even one slice of the job fits in the memory available.
var ErrTooLarge = errors.New("plan: not even one slice fits")

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
	Available int64          `json:"available_bytes"` // the device bytes the plan was made for
	Overhead  float64        `json:"overhead"`        // the factor Available was divided by
	MaxSlices int            `json:"max_slices"`      // the estimator's answer for Available/Overhead
	Chunks    []Chunk        `json:"chunks"`          // in order, covering every slice once, as even as can be
	OutDType  devarray.DType `json:"out_dtype"`
}

// Explain says in one line what the plan is and why.
func (p Plan) Explain() string {
	return fmt.Sprintf("%s on %v %v along axis %d: %d chunks of at most %d slices (%s available / overhead %.2f fits %d slices)",
		p.Method, p.Shape, p.DType, p.SliceDim, len(p.Chunks), p.largest(), accounting.FormatBytes(p.Available), p.Overhead, p.MaxSlices)
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
func Chunks(m Method, shape [3]int, sliceDim int, dtype devarray.DType, params Params, available int64, overhead float64) (Plan, error) {
	p := Plan{Method: m.Name(), Shape: shape, SliceDim: sliceDim, DType: dtype, Available: available, Overhead: overhead}
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
	usable := int64(math.Round(float64(available) / overhead)) // to the byte: 33 KiB / 1.1 is 30 KiB, not a byte less
	s, out, err := m.MaxSlices(sliceDim, other, dtype, usable, params)
	if err != nil {
		return p, fmt.Errorf("plan: %s: %w", m.Name(), err)
	}
	p.MaxSlices, p.OutDType = s, out
	total := shape[sliceDim]
	if total == 0 {
		return p, nil
	}
	if s < 1 {
		return p, fmt.Errorf("plan: %s on slices of %v %v: %s usable (%s / %.2f): %w",
			m.Name(), other, dtype, accounting.FormatBytes(usable), accounting.FormatBytes(available), overhead, ErrTooLarge)
	}
	n := (total + s - 1) / s // chunks needed
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
	led := dev.Ledger()
	avail, err := led.Available()
	if err != nil {
		return Plan{Method: m.Name()}, fmt.Errorf("plan: %w", err)
	}
	return Chunks(m, shape, sliceDim, dtype, params, avail, led.Overhead())
}
