package devarray_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

func TestDTypeTable(t *testing.T) {
	tests := []struct {
		d       devarray.DType
		name    string
		size    int64
		typestr string
		code    uint8
	}{
		{devarray.Bool, "bool", 1, "|b1", devarray.DLBool},
		{devarray.Int8, "int8", 1, "|i1", devarray.DLInt},
		{devarray.Int16, "int16", 2, "<i2", devarray.DLInt},
		{devarray.Int32, "int32", 4, "<i4", devarray.DLInt},
		{devarray.Int64, "int64", 8, "<i8", devarray.DLInt},
		{devarray.Uint8, "uint8", 1, "|u1", devarray.DLUInt},
		{devarray.Uint16, "uint16", 2, "<u2", devarray.DLUInt},
		{devarray.Uint32, "uint32", 4, "<u4", devarray.DLUInt},
		{devarray.Uint64, "uint64", 8, "<u8", devarray.DLUInt},
		{devarray.Float16, "float16", 2, "<f2", devarray.DLFloat},
		{devarray.BFloat16, "bfloat16", 2, "<V2", devarray.DLBfloat},
		{devarray.Float32, "float32", 4, "<f4", devarray.DLFloat},
		{devarray.Float64, "float64", 8, "<f8", devarray.DLFloat},
		{devarray.Complex64, "complex64", 8, "<c8", devarray.DLComplex},
		{devarray.Complex128, "complex128", 16, "<c16", devarray.DLComplex},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.True(t, tt.d.Valid())
			assert.Equal(t, tt.name, tt.d.String())
			assert.Equal(t, tt.size, tt.d.Size())
			assert.Equal(t, tt.typestr, tt.d.Typestr())
			code, bits, lanes, err := tt.d.DLPack()
			require.NoError(t, err)
			assert.Equal(t, []any{tt.code, uint8(tt.size * 8), uint16(1)}, []any{code, bits, lanes})

			back, err := devarray.ParseTypestr(tt.typestr)
			require.NoError(t, err)
			assert.Equal(t, tt.d, back, "typestr round trip")
			back, err = devarray.ParseDLPack(code, bits, lanes)
			require.NoError(t, err)
			assert.Equal(t, tt.d, back, "DLPack round trip")
			back, err = devarray.ParseDType(tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.d, back, "name round trip")
		})
	}
}

func TestInvalidDType(t *testing.T) {
	for _, d := range []devarray.DType{devarray.Invalid, devarray.DType(200)} {
		assert.False(t, d.Valid())
		assert.Zero(t, d.Size())
		assert.Empty(t, d.Typestr())
		_, _, _, err := d.DLPack()
		assert.ErrorIs(t, err, devarray.ErrDType)
	}
	assert.Equal(t, "DType(200)", devarray.DType(200).String())
	next := devarray.Complex128 + 1 // the first value past the last type
	assert.False(t, next.Valid())
	assert.Equal(t, "DType("+strconv.Itoa(int(next))+")", next.String(), "named by number, not a table entry")
	_, err := devarray.ParseDType("float128")
	assert.ErrorIs(t, err, devarray.ErrDType)
}

func TestParseTypestr(t *testing.T) {
	good := map[string]devarray.DType{
		"=f4": devarray.Float32, "<f8": devarray.Float64, "|u1": devarray.Uint8, ">i1": devarray.Int8,
		"<b1": devarray.Bool, "|V2": devarray.BFloat16, "<c16": devarray.Complex128,
	}
	for s, want := range good {
		got, err := devarray.ParseTypestr(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	bad := []string{"", "f4", "<f", "<f3", ">f4", "|f4", "<x4", "<f+4", "<f-4", "!f4", "<i16", "<f0", "<f99999", "<c32", "<V4"}
	for _, s := range bad {
		_, err := devarray.ParseTypestr(s)
		assert.ErrorIs(t, err, devarray.ErrDType, "%q must be refused", s)
	}
}

func TestParseDLPackRefuses(t *testing.T) {
	tests := []struct {
		code  uint8
		bits  uint8
		lanes uint16
	}{
		{devarray.DLFloat, 32, 4}, {devarray.DLFloat, 12, 1}, {devarray.DLFloat, 128, 1}, {3, 64, 1}, {devarray.DLBool, 8 * 2, 1},
	}
	for _, tt := range tests {
		_, err := devarray.ParseDLPack(tt.code, tt.bits, tt.lanes)
		assert.ErrorIs(t, err, devarray.ErrDType, "%+v", tt)
	}
}

func TestDeviceKinds(t *testing.T) {
	tests := []struct {
		k      devarray.DeviceKind
		name   string
		dl     int32
		onHost bool
	}{
		{devarray.CPU, "cpu", devarray.DLCPU, true},
		{devarray.CUDA, "cuda", devarray.DLCUDA, false},
		{devarray.CUDAHost, "cuda_host", devarray.DLCUDAHost, true},
		{devarray.CUDAManaged, "cuda_managed", devarray.DLCUDAManaged, true},
		{devarray.Sim, "sim", devarray.DLCPU, true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.name, tt.k.String())
		assert.Equal(t, tt.onHost, tt.k.HostAccessible(), tt.name)
		dl, err := tt.k.DLPack()
		require.NoError(t, err)
		assert.Equal(t, tt.dl, dl)
		if tt.k != devarray.Sim {
			back, err := devarray.KindFromDLPack(dl)
			require.NoError(t, err)
			assert.Equal(t, tt.k, back)
		}
	}
	_, err := devarray.UnknownKind.DLPack()
	assert.ErrorIs(t, err, devarray.ErrDevice)
	_, err = devarray.KindFromDLPack(7)
	assert.ErrorIs(t, err, devarray.ErrDevice)
	assert.Equal(t, "DeviceKind(99)", devarray.DeviceKind(99).String())
	next := devarray.Sim + 1 // the first value past the last kind
	assert.Equal(t, "DeviceKind("+strconv.Itoa(int(next))+")", next.String(), "named by number, not a table entry")
	assert.Equal(t, "cuda:2", devarray.DeviceID{Kind: devarray.CUDA, Ordinal: 2}.String())
	assert.Equal(t, "0x7f00", devarray.Ptr(0x7f00).String())
}

func FuzzParseTypestr(f *testing.F) {
	for _, s := range []string{"<f4", "|b1", "<c16", "=i8", ">u1", "<V2", "<f+4", "", "<<<<"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := devarray.ParseTypestr(s)
		if err != nil {
			if d != devarray.Invalid {
				t.Fatalf("ParseTypestr(%q) returned %v with error %v", s, d, err)
			}
			return
		}
		if !d.Valid() {
			t.Fatalf("ParseTypestr(%q) = invalid %v without error", s, d)
		}
		if size, _ := strconv.Atoi(s[2:]); int64(size) != d.Size() {
			t.Fatalf("ParseTypestr(%q) = %v of %d bytes", s, d, d.Size())
		}
		if back, err := devarray.ParseTypestr(d.Typestr()); err != nil || back != d {
			t.Fatalf("%v.Typestr() = %q parses to %v, %v", d, d.Typestr(), back, err)
		}
	})
}

func TestDTypeJSON(t *testing.T) {
	for d := devarray.Bool; d.Valid(); d++ {
		b, err := json.Marshal(struct{ D devarray.DType }{d})
		require.NoError(t, err)
		assert.Equal(t, `{"D":"`+d.String()+`"}`, string(b))
		var back struct{ D devarray.DType }
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, d, back.D)
	}
	_, err := json.Marshal(devarray.Invalid)
	assert.ErrorIs(t, err, devarray.ErrDType)
	var d devarray.DType
	assert.ErrorIs(t, json.Unmarshal([]byte(`"float7"`), &d), devarray.ErrDType)
}
