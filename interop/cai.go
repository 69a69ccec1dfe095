package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/cuarray/cuarray/devarray"
)

// CAIVersion is the CUDA Array Interface version ExportCAI writes.
const CAIVersion = 3

// ErrInterface means an array interface dict is malformed or asks for
// something cuarray does not do (a mask, stream 0, an old version).
var ErrInterface = errors.New("bad array interface")

// ExportCAI returns a's CUDA Array Interface (v3) as a map with the keys
// of __cuda_array_interface__: shape, typestr, data (pointer, read-only),
// version, strides (nil when C-contiguous, as the spec asks), descr and
// stream (the producer's stream handle, nil for none; 0 is not allowed,
// so stream 0 here means none). It moves and allocates nothing.
func ExportCAI(a *devarray.DevArray, stream uintptr) (map[string]any, error) {
	m, err := export(a)
	if err != nil {
		return nil, fmt.Errorf("interop: export CUDA array interface: %w", err)
	}
	m["stream"] = nil
	if stream != 0 {
		m["stream"] = uint64(stream)
	}
	return m, nil
}

// ExportArrayInterface returns the NumPy __array_interface__ (v3) of an
// array in host-accessible memory (sim, pinned, CPU): the same keys as the
// CUDA one without stream.
func ExportArrayInterface(a *devarray.DevArray) (map[string]any, error) {
	if !a.Device().Kind.HostAccessible() {
		return nil, fmt.Errorf("interop: export array interface: memory on %v is not host memory (use the CUDA array interface): %w", a.Device(), devarray.ErrDevice)
	}
	m, err := export(a)
	if err != nil {
		return nil, fmt.Errorf("interop: export array interface: %w", err)
	}
	return m, nil
}

func export(a *devarray.DevArray) (map[string]any, error) {
	d, err := a.Descriptor()
	if err != nil {
		return nil, err
	}
	if err := checkOpen(a); err != nil {
		return nil, err
	}
	shape := make([]any, len(d.Shape))
	for i, n := range d.Shape {
		shape[i] = n
	}
	var strides any
	if !a.IsContiguous() {
		s := make([]any, len(d.Strides))
		for i, v := range d.Strides {
			s[i] = v
		}
		strides = s
	}
	ts := d.DType.Typestr()
	return map[string]any{
		"shape":   shape,
		"typestr": ts,
		"data":    []any{uint64(d.Ptr), d.ReadOnly},
		"version": CAIVersion,
		"strides": strides,
		"descr":   []any{[]any{"", ts}},
	}, nil
}

// MarshalCAI returns ExportCAI's map as JSON.
func MarshalCAI(a *devarray.DevArray, stream uintptr) ([]byte, error) {
	m, err := ExportCAI(a, stream)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// ParseJSON decodes an array interface written as JSON, keeping its
// numbers exact (pointers above 2^53 survive).
func ParseJSON(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("interop: array interface JSON: %v: %w", err, ErrInterface)
	}
	if dec.More() {
		return nil, fmt.Errorf("interop: array interface JSON: data after the object: %w", ErrInterface)
	}
	return m, nil
}

// ImportCAI borrows the memory a CUDA Array Interface describes as a
// DevArray on backend b's device, without copying and without counting an
// allocation, and returns the producer's stream (0 for none). Every field
// is checked: a bad typestr, a negative or overflowing shape, strides of
// the wrong length, a mask, stream 0 or a version below 2 is an error
// wrapping ErrInterface or a devarray error, never a panic. Pass
// devarray.WithBounds when the allocation is known, so strides reaching
// outside it are refused. The caller must wait on the returned stream
// before using the data (the interface's stream rule).
func ImportCAI(b devarray.Backend, m map[string]any, opts ...devarray.WrapOption) (*devarray.DevArray, uintptr, error) {
	if b == nil {
		return nil, 0, fmt.Errorf("interop: import CUDA array interface: no backend: %w", devarray.ErrNoBackend)
	}
	d, err := descriptor(m, b.DeviceID())
	if err != nil {
		return nil, 0, fmt.Errorf("interop: import CUDA array interface: %w", err)
	}
	var stream uint64
	if v, ok := m["stream"]; ok && v != nil {
		if stream, err = uintOf("stream", v); err != nil {
			return nil, 0, fmt.Errorf("interop: import CUDA array interface: %w", err)
		}
		if stream == 0 {
			return nil, 0, fmt.Errorf("interop: import CUDA array interface: stream 0 is ambiguous and not allowed (use 1 for the legacy default stream): %w", ErrInterface)
		}
	}
	a, err := devarray.Wrap(b, d, opts...)
	if err != nil {
		return nil, 0, fmt.Errorf("interop: import CUDA array interface: %w", err)
	}
	return a, uintptr(stream), nil
}

// ImportArrayInterface borrows host memory described by a NumPy
// __array_interface__ as a DevArray of kind cpu, with no backend: a
// descriptor to compute on in place or to hand on. The memory must stay
// alive while the array is used.
func ImportArrayInterface(m map[string]any, opts ...devarray.WrapOption) (*devarray.DevArray, error) {
	d, err := descriptor(m, devarray.DeviceID{Kind: devarray.CPU})
	if err != nil {
		return nil, fmt.Errorf("interop: import array interface: %w", err)
	}
	a, err := devarray.Wrap(nil, d, opts...)
	if err != nil {
		return nil, fmt.Errorf("interop: import array interface: %w", err)
	}
	return a, nil
}

// descriptor checks the fields both interfaces share.
func descriptor(m map[string]any, dev devarray.DeviceID) (devarray.Descriptor, error) {
	if m == nil {
		return devarray.Descriptor{}, fmt.Errorf("no interface: %w", ErrInterface)
	}
	version, err := intOf("version", m["version"])
	if err != nil {
		return devarray.Descriptor{}, err
	}
	if version < 2 || version > CAIVersion {
		return devarray.Descriptor{}, fmt.Errorf("version %d: want 2 or 3: %w", version, ErrInterface)
	}
	if mask, ok := m["mask"]; ok && mask != nil {
		return devarray.Descriptor{}, fmt.Errorf("a mask is not supported: %w", ErrInterface)
	}
	ts, ok := m["typestr"].(string)
	if !ok {
		return devarray.Descriptor{}, fmt.Errorf("typestr %v: want a string: %w", m["typestr"], ErrInterface)
	}
	dtype, err := devarray.ParseTypestr(ts)
	if err != nil {
		return devarray.Descriptor{}, err
	}
	shape64, err := intList("shape", m["shape"])
	if err != nil {
		return devarray.Descriptor{}, err
	}
	shape := make([]int, len(shape64))
	for i, n := range shape64 {
		if n < 0 || n > math.MaxInt {
			return devarray.Descriptor{}, fmt.Errorf("shape %v: size %d out of range: %w", shape64, n, ErrInterface)
		}
		shape[i] = int(n)
	}
	var strides []int64
	if s, ok := m["strides"]; ok && s != nil {
		if strides, err = intList("strides", s); err != nil {
			return devarray.Descriptor{}, err
		}
		if len(strides) != len(shape) {
			return devarray.Descriptor{}, fmt.Errorf("%d strides for %d axes: %w", len(strides), len(shape), ErrInterface)
		}
	}
	data, ok := m["data"].([]any)
	if !ok || len(data) != 2 {
		return devarray.Descriptor{}, fmt.Errorf("data %v: want (pointer, read-only): %w", m["data"], ErrInterface)
	}
	ptr, err := uintOf("data pointer", data[0])
	if err != nil {
		return devarray.Descriptor{}, err
	}
	readonly, ok := data[1].(bool)
	if !ok {
		return devarray.Descriptor{}, fmt.Errorf("data read-only flag %v: want a bool: %w", data[1], ErrInterface)
	}
	return devarray.Descriptor{Ptr: devarray.Ptr(ptr), Shape: shape, Strides: strides, DType: dtype, Device: dev, ReadOnly: readonly}, nil
}

// intList reads a tuple of integers ([]any from JSON or Go, or []int, []int64).
func intList(name string, v any) ([]int64, error) {
	switch l := v.(type) {
	case []int:
		out := make([]int64, len(l))
		for i, x := range l {
			out[i] = int64(x)
		}
		return out, nil
	case []int64:
		return append([]int64(nil), l...), nil
	case []any:
		out := make([]int64, len(l))
		for i, x := range l {
			n, err := intOf(name, x)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s %v: want a tuple of integers: %w", name, v, ErrInterface)
}

// intOf reads one integer of any Go integer type, an integral float64 or a json.Number.
func intOf(name string, v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x > math.MaxInt64 {
			break
		}
		return int64(x), nil
	case uintptr:
		if uint64(x) > math.MaxInt64 {
			break
		}
		return int64(x), nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= 1<<53 {
			return int64(x), nil
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s %v: want an integer: %w", name, v, ErrInterface)
}

// uintOf reads a non-negative integer up to 2^64-1 (pointers and stream handles).
func uintOf(name string, v any) (uint64, error) {
	switch x := v.(type) {
	case uint64:
		return x, nil
	case uintptr:
		return uint64(x), nil
	case json.Number:
		if u, err := strconv.ParseUint(x.String(), 10, 64); err == nil {
			return u, nil
		}
	}
	n, err := intOf(name, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%s %d: want a non-negative integer: %w", name, n, ErrInterface)
	}
	return uint64(n), nil
}
