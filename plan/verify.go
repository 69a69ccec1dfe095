package plan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrEstimate: an estimator's answer is outside the bounds Verify demands.
var ErrEstimate = errors.New("memory estimate out of bounds")

// Bounds of Verify: the estimate must be at least MinRatio and at most
// MaxRatio of the slices actually run. httomo accepts 80 %; we demand 95 %.
const (
	MinRatio = 0.95
	MaxRatio = 1.0
)

// Case is one Verify run: a method, the 3-D shape of its input, the slice
// axis, the dtype and the parameters.
type Case struct {
	Method   Method
	Shape    [3]int
	SliceDim int
	DType    devarray.DType
	Params   Params
}

// Result is what Verify measured and what the estimator answered.
type Result struct {
	Method    string
	Shape     [3]int
	DType     devarray.DType
	Slices    int   // slices the run took
	Peak      int64 // the ledger's device peak during the run, input included
	Estimated int   // MaxSlices(available = Peak)
	Ratio     float64
	OutDType  devarray.DType
	Degraded  bool // the run took its slower algorithm (ErrPerfDegraded)
}

// String is one line of a results table.
func (r Result) String() string {
	return fmt.Sprintf("%-16s %-16v %-8v peak %-12s slices %4d estimated %4d ratio %.3f",
		r.Method, r.Shape, r.DType, accounting.FormatBytes(r.Peak), r.Slices, r.Estimated, r.Ratio)
}

// Verify runs c's method on fresh random data on dev, inside a ledger scope
// that also holds the input's upload and a fresh workspace, reads the peak
// of device memory, asks the method's MaxSlices with that peak as the
// available memory, and checks the answer against MinRatio and MaxRatio,
// and a method's OutputBytes (Outputs) against the output the run made.
// It returns the figures with ErrEstimate when they are out of bounds. It
// frees everything it allocated, also on failure. The ledger's scopes are
// shared: nothing else may use dev while it runs.
func Verify(dev driver.Device, c Case) (Result, error) {
	if dev == nil || c.Method == nil {
		return Result{}, fmt.Errorf("plan: verify: no device or method: %w", ErrNil)
	}
	res := Result{Method: c.Method.Name(), Shape: c.Shape, DType: c.DType}
	other, err := otherDims(c.Shape, c.SliceDim)
	if err != nil {
		return res, err
	}
	res.Slices = c.Shape[c.SliceDim]
	led := dev.Ledger()
	// The input must fit on the device, so its host copy is no larger: a
	// shape of terabytes is refused before the host data is made.
	need, err := accounting.EstimateBytes(c.Shape[:], c.DType)
	if err != nil {
		return res, fmt.Errorf("plan: verify %s: %w", res.Method, err)
	}
	if avail, err := led.Available(); err != nil || need > avail {
		return res, fmt.Errorf("plan: verify %s on %v %v: the input alone needs %s, %s available: %w",
			res.Method, c.Shape, c.DType, accounting.FormatBytes(need), accounting.FormatBytes(avail), errors.Join(ErrTooLarge, err))
	}
	data, err := randomData(c.Shape, c.DType)
	if err != nil {
		return res, err
	}
	var outDType devarray.DType
	var outBytes int64
	snap, err := led.Measure("verify "+res.Method, func() error {
		ws := accounting.NewWorkspace(dev)
		in, err := devarray.FromBytes(dev, data, c.DType, c.Shape[:]...)
		if err != nil {
			return err
		}
		out, err := c.Method.Run(Env{Dev: dev, Workspace: ws}, in, c.SliceDim, c.Params)
		if errors.Is(err, accounting.ErrPerfDegraded) {
			res.Degraded, err = true, nil // a correct result by the slower algorithm
		}
		if err == nil {
			outDType, outBytes = out.DType(), out.NBytes()
			if out != in {
				err = out.Free()
			}
		}
		return errors.Join(err, in.Free(), ws.Free())
	})
	if err != nil {
		return res, fmt.Errorf("plan: verify %s on %v %v: %w", res.Method, c.Shape, c.DType, err)
	}
	res.Peak = snap.Kinds[accounting.Device].Peak
	est, estOut, err := c.Method.MaxSlices(c.SliceDim, other, c.DType, res.Peak, c.Params)
	if err != nil {
		return res, fmt.Errorf("plan: verify %s: estimator: %w", res.Method, err)
	}
	res.Estimated, res.OutDType = est, estOut
	res.Ratio = float64(est) / float64(res.Slices)
	if estOut != outDType {
		return res, fmt.Errorf("plan: verify %s: estimator says the output is %v, the run made %v: %w", res.Method, estOut, outDType, ErrEstimate)
	}
	if want, ok, err := OutputBytes(c.Method, c.SliceDim, other, c.DType, int64(res.Slices), c.Params); ok && (err != nil || want != outBytes) {
		return res, fmt.Errorf("plan: verify %s: OutputBytes says %d bytes (error %v), the run made %d: %w", res.Method, want, err, outBytes, ErrEstimate)
	}
	if res.Ratio < MinRatio || res.Ratio > MaxRatio {
		return res, fmt.Errorf("plan: verify: %v: want a ratio in [%.2f, %.2f]: %w", res, MinRatio, MaxRatio, ErrEstimate)
	}
	return res, nil
}

// randomData returns random values for shape and dtype: floats in [0, 1)
// for float types (so every method gets finite input), random bytes
// otherwise.
func randomData(shape [3]int, dt devarray.DType) ([]byte, error) {
	if _, err := accounting.EstimateBytes(shape[:], dt); err != nil {
		return nil, err
	}
	count := shape[0] * shape[1] * shape[2]
	b := make([]byte, count*int(dt.Size()))
	switch dt {
	case devarray.Float32:
		for i := range count {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(rand.Float32()))
		}
	case devarray.Float64:
		for i := range count {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(rand.Float64()))
		}
	default:
		for i := range b {
			b[i] = byte(rand.Uint32())
		}
	}
	return b, nil
}
