package plan

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// ErrUnknownMethod: Lookup of a name no method was registered under.
var ErrUnknownMethod = errors.New("unknown plan method")

// ErrDuplicate: Register of a name already taken.
var ErrDuplicate = errors.New("plan method already registered")

// Params are a method's integer parameters (angles, output size, ...).
type Params map[string]int

// Get returns the parameter name, or def when it is not set.
func (p Params) Get(name string, def int) int {
	if v, ok := p[name]; ok {
		return v
	}
	return def
}

// Env is what a method runs with: the device, and a workspace for its
// scratch memory (methods that need none ignore it).
type Env struct {
	Dev       driver.Device
	Workspace *accounting.Workspace
}

// Method is an operation on slabs of a 3-D array.
type Method interface {
	// Name is the method's registry name, "fbp.filter".
	Name() string
	// MaxSlices returns the most slices along sliceDim that one run can
	// take within available device bytes, given the sizes of the two other
	// axes (in order) and the input dtype, and the dtype of the output. It
	// counts everything the run allocates, input included. 0 slices with a
	// nil error means not even one fits.
	MaxSlices(sliceDim int, otherDims [2]int, dtype devarray.DType, available int64, params Params) (slices int, outDType devarray.DType, err error)
	// Run runs the method on in, a 3-D array of whole slices along
	// sliceDim. It returns the output: in itself for an in-place method,
	// else a new array the caller frees.
	Run(env Env, in *devarray.DevArray, sliceDim int, params Params) (*devarray.DevArray, error)
}

// Registry holds methods by name. It is safe for concurrent use; the zero
// Registry is empty and ready.
type Registry struct {
	mu sync.RWMutex
	m  map[string]Method
}

// Register adds m under m.Name(); a name already taken is an error, and
// so are a nil method and an empty name.
func (r *Registry) Register(m Method) error {
	if r == nil || m == nil {
		return fmt.Errorf("plan: register: %w", ErrNil)
	}
	if m.Name() == "" {
		return fmt.Errorf("plan: register a method without a name: %w", accounting.ErrInvalidArgument)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]Method)
	}
	if _, ok := r.m[m.Name()]; ok {
		return fmt.Errorf("plan: register %q: %w", m.Name(), ErrDuplicate)
	}
	r.m[m.Name()] = m
	return nil
}

// Lookup returns the method registered under name.
func (r *Registry) Lookup(name string) (Method, error) {
	if r == nil {
		return nil, fmt.Errorf("plan: lookup %q: %w", name, ErrNil)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	m, ok := r.m[name]
	if !ok {
		known := "none are registered"
		if names := r.namesLocked(); len(names) > 0 {
			known = "known: " + strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("%w %q (%s)", ErrUnknownMethod, name, known)
	}
	return m, nil
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

func (r *Registry) namesLocked() []string {
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Default is the registry that packages add their methods to.
var Default = &Registry{}

// otherDims returns the two axes of shape other than sliceDim.
func otherDims(shape [3]int, sliceDim int) ([2]int, error) {
	if sliceDim < 0 || sliceDim > 2 {
		return [2]int{}, fmt.Errorf("plan: slice axis %d of a 3-D array: %w", sliceDim, devarray.ErrShape)
	}
	var o [2]int
	j := 0
	for i, d := range shape {
		if i != sliceDim {
			o[j] = d
			j++
		}
	}
	return o, nil
}

// MaxFit returns the largest number of slices s for which total(s), the
// bytes a run of s slices allocates, is at most available; 0 when not even
// one fits. total must not decrease as s grows. Estimators describe their
// allocations in total and let MaxFit solve for s exactly, rounding and all.
// A negative total means the size overflowed: it does not fit. A nil total
// fits nothing.
func MaxFit(available int64, total func(slices int64) int64) int {
	if total == nil {
		return 0
	}
	fits := func(s int64) bool {
		t := total(s)
		return t >= 0 && t <= available
	}
	if !fits(1) {
		return 0
	}
	lo, hi := int64(1), int64(2)
	for fits(hi) {
		lo, hi = hi, hi*2
		if hi > 1<<40 {
			return int(lo)
		}
	}
	for hi-lo > 1 { // fits(lo), !fits(hi)
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return int(lo)
}
