package devarray

import (
	"fmt"
	"strconv"
)

// DType is the element type of a DevArray.
type DType uint8

// The element types. Invalid is the zero value and is never a valid element type.
const (
	Invalid DType = iota
	Bool
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Float16
	BFloat16
	Float32
	Float64
	Complex64
	Complex128
	numDTypes
)

// DLPack type codes (DLDataTypeCode in dlpack.h).
const (
	DLInt     uint8 = 0
	DLUInt    uint8 = 1
	DLFloat   uint8 = 2
	DLBfloat  uint8 = 4
	DLComplex uint8 = 5
	DLBool    uint8 = 6
)

type dtypeInfo struct {
	name     string
	size     int64
	typestr  string
	dlCode   uint8
	numpyKey byte // kind letter in a typestr: b, i, u, f, c, V
}

var dtypeTable = [numDTypes]dtypeInfo{
	Invalid:    {name: "invalid"},
	Bool:       {"bool", 1, "|b1", DLBool, 'b'},
	Int8:       {"int8", 1, "|i1", DLInt, 'i'},
	Int16:      {"int16", 2, "<i2", DLInt, 'i'},
	Int32:      {"int32", 4, "<i4", DLInt, 'i'},
	Int64:      {"int64", 8, "<i8", DLInt, 'i'},
	Uint8:      {"uint8", 1, "|u1", DLUInt, 'u'},
	Uint16:     {"uint16", 2, "<u2", DLUInt, 'u'},
	Uint32:     {"uint32", 4, "<u4", DLUInt, 'u'},
	Uint64:     {"uint64", 8, "<u8", DLUInt, 'u'},
	Float16:    {"float16", 2, "<f2", DLFloat, 'f'},
	BFloat16:   {"bfloat16", 2, "<V2", DLBfloat, 'V'},
	Float32:    {"float32", 4, "<f4", DLFloat, 'f'},
	Float64:    {"float64", 8, "<f8", DLFloat, 'f'},
	Complex64:  {"complex64", 8, "<c8", DLComplex, 'c'},
	Complex128: {"complex128", 16, "<c16", DLComplex, 'c'},
}

// Valid reports whether d is one of the defined element types.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// Size returns the size of one element in bytes, or 0 for an invalid DType.
func (d DType) Size() int64 {
	if !d.Valid() {
		return 0
	}
	return dtypeTable[d].size
}

// Align returns the alignment of one element in bytes, as NumPy and C
// give it: the item size, half of it for the complex types (two floats),
// or 0 for an invalid DType. Wrap refuses a descriptor of device memory
// whose address or strides are not multiples of it (ErrMisaligned).
func (d DType) Align() int64 {
	if !d.Valid() {
		return 0
	}
	if dtypeTable[d].numpyKey == 'c' {
		return dtypeTable[d].size / 2
	}
	return dtypeTable[d].size
}

// String returns the NumPy name of the type ("float32", "bfloat16", ...).
func (d DType) String() string {
	if d >= numDTypes {
		return "DType(" + strconv.Itoa(int(d)) + ")"
	}
	return dtypeTable[d].name
}

// Typestr returns the type string of the CUDA Array Interface and NumPy's
// __array_interface__ ("<f4", "|b1", ...). BFloat16, which NumPy lacks, is
// written "<V2" as ml_dtypes writes it; ParseTypestr reads "<V2" back as BFloat16.
func (d DType) Typestr() string {
	if !d.Valid() {
		return ""
	}
	return dtypeTable[d].typestr
}

// DLPack returns the DLPack DLDataType of d: type code, bits and lanes.
// It returns an error for an invalid DType.
func (d DType) DLPack() (code, bits uint8, lanes uint16, err error) {
	if !d.Valid() {
		return 0, 0, 0, fmt.Errorf("devarray: %v has no DLPack type: %w", d, ErrDType)
	}
	return dtypeTable[d].dlCode, uint8(dtypeTable[d].size * 8), 1, nil
}

// MarshalText writes the NumPy name, so JSON shows "float32", not a number.
// Invalid is refused.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("devarray: marshal %v: %w", d, ErrDType)
	}
	return []byte(d.String()), nil
}

// UnmarshalText reads a NumPy name, as ParseDType.
func (d *DType) UnmarshalText(b []byte) error {
	if d == nil {
		return fmt.Errorf("devarray: unmarshal dtype into nil: %w", ErrNil)
	}
	v, err := ParseDType(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// ParseDType returns the DType with the given NumPy name ("float32", "bool", ...).
func ParseDType(name string) (DType, error) {
	for d := Bool; d < numDTypes; d++ {
		if dtypeTable[d].name == name {
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("devarray: unknown dtype name %q: %w", name, ErrDType)
}

// ParseTypestr parses a CUDA Array Interface / NumPy type string such as
// "<f4", "|u1", "=i8" or "<c16". Byte order must be little-endian ("<"), native
// ("=", little-endian on every platform cuarray runs on) or, for one-byte types,
// not applicable ("|"). Big-endian multi-byte types are refused.
func ParseTypestr(s string) (DType, error) {
	if len(s) < 3 || len(s) > 4 {
		return Invalid, fmt.Errorf("devarray: typestr %q: want byte order, kind and size, like \"<f4\": %w", s, ErrDType)
	}
	order, kind := s[0], s[1]
	size, err := strconv.Atoi(s[2:])
	if err != nil || size <= 0 || s[2] == '+' || s[2] == '-' {
		return Invalid, fmt.Errorf("devarray: typestr %q: size %q is not a positive number: %w", s, s[2:], ErrDType)
	}
	switch order {
	case '<', '=', '|':
	case '>':
		if size != 1 {
			return Invalid, fmt.Errorf("devarray: typestr %q: big-endian data is not supported: %w", s, ErrDType)
		}
	default:
		return Invalid, fmt.Errorf("devarray: typestr %q: byte order %q is not one of < > = |: %w", s, order, ErrDType)
	}
	for d := Bool; d < numDTypes; d++ {
		info := dtypeTable[d]
		if info.numpyKey == kind && info.size == int64(size) {
			if order == '|' && size != 1 && kind != 'V' {
				return Invalid, fmt.Errorf("devarray: typestr %q: byte order '|' is only for one-byte types: %w", s, ErrDType)
			}
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("devarray: typestr %q: no supported type of kind %q and %d bytes: %w", s, kind, size, ErrDType)
}

// ParseDLPack returns the DType of a DLPack DLDataType. Only lanes == 1 is supported.
func ParseDLPack(code, bits uint8, lanes uint16) (DType, error) {
	if lanes != 1 {
		return Invalid, fmt.Errorf("devarray: DLPack dtype with %d lanes: only 1 lane is supported: %w", lanes, ErrDType)
	}
	if bits%8 != 0 {
		return Invalid, fmt.Errorf("devarray: DLPack dtype with %d bits: not a whole number of bytes: %w", bits, ErrDType)
	}
	for d := Bool; d < numDTypes; d++ {
		info := dtypeTable[d]
		if info.dlCode == code && info.size*8 == int64(bits) {
			return d, nil
		}
	}
	return Invalid, fmt.Errorf("devarray: DLPack dtype code %d with %d bits is not supported: %w", code, bits, ErrDType)
}
