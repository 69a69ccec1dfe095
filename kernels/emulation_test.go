package kernels

import (
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
)

// packed returns the parameter buffer of args.
func packed(args *driver.KernelArgs) []byte {
	b, _ := args.Bytes()
	return b
}

// fillLayout is a 1-D layout of n items of stride bytes.
func fillLayout(n int, stride int64) layout {
	return layout{n: int64(n), shape: []int{n}, strides: []int64{stride}}
}

// A launch decodes its parameters as KernelArgs packed them, covers
// exactly the memory the kernel touches, and runs the same reference sim
// runs; misaligned accesses are named.
func TestEmulate(t *testing.T) {
	const base = devarray.Ptr(1 << 20)
	v := rand.Float64()
	cases := []struct {
		name       string
		kernel     string
		args       *driver.KernelArgs
		ranges     []driver.Range
		misaligned bool
	}{
		{"fill f32", "fill_f32", new(driver.KernelArgs).Ptr(base).Struct(fillLayout(10, 4).encode(), 8).F32(float32(v)),
			[]driver.Range{{Ptr: base, N: 40}}, false},
		{"fill f64 reversed", "fill_f64", new(driver.KernelArgs).Ptr(base+72).Struct(fillLayout(10, -8).encode(), 8).F64(v),
			[]driver.Range{{Ptr: base, N: 80}}, false},
		{"fill f32 misaligned", "fill_f32", new(driver.KernelArgs).Ptr(base+2).Struct(fillLayout(10, 4).encode(), 8).F32(1),
			[]driver.Range{{Ptr: base + 2, N: 40}}, true},
		{"fill f64 odd stride", "fill_f64", new(driver.KernelArgs).Ptr(base).Struct(fillLayout(3, 12).encode(), 8).F64(1),
			[]driver.Range{{Ptr: base, N: 32}}, true},
		{"pack 8", "pack_8", new(driver.KernelArgs).Ptr(base).Ptr(base+4096).Struct(fillLayout(4, 16).encode(), 8),
			[]driver.Range{{Ptr: base, N: 32}, {Ptr: base + 4096, N: 56, ReadOnly: true}}, false},
		{"pack 16 at 8 bytes", "pack_16", new(driver.KernelArgs).Ptr(base+8).Ptr(base+4096).Struct(fillLayout(2, 16).encode(), 8),
			[]driver.Range{{Ptr: base + 8, N: 32}, {Ptr: base + 4096, N: 32, ReadOnly: true}}, false},
		{"unpack 4", "unpack_4", new(driver.KernelArgs).Ptr(base+4096).Struct(fillLayout(4, 16).encode(), 8).Ptr(base),
			[]driver.Range{{Ptr: base + 4096, N: 52}, {Ptr: base, N: 16, ReadOnly: true}}, false},
		{"scale f32", "scale_f32", new(driver.KernelArgs).Ptr(base).Struct(fillLayout(10, 4).encode(), 8).F32(float32(v)),
			[]driver.Range{{Ptr: base, N: 40}}, false},
		{"axpy f64", "axpy_f64", new(driver.KernelArgs).Ptr(base).Struct(fillLayout(5, 8).encode(), 8).Ptr(base+4096).Struct(fillLayout(5, 16).encode(), 8).F64(v),
			[]driver.Range{{Ptr: base, N: 40}, {Ptr: base + 4096, N: 72, ReadOnly: true}}, false},
		{"sum f32", "sum_f32", new(driver.KernelArgs).Ptr(base).Struct(fillLayout(6, 4).encode(), 8).Ptr(base + 512),
			[]driver.Range{{Ptr: base, N: 24, ReadOnly: true}, {Ptr: base + 512, N: 8}}, false},
		{"trig table", "trig_table_f32", new(driver.KernelArgs).Ptr(base).I32(6),
			[]driver.Range{{Ptr: base, N: 48}}, false},
		{"ramp taps", "ramp_taps_f64", new(driver.KernelArgs).Ptr(base).I32(5),
			[]driver.Range{{Ptr: base, N: 72}}, false},
		{"checksum", "checksum", new(driver.KernelArgs).Ptr(base).I64(100).Ptr(base + 512),
			[]driver.Range{{Ptr: base, N: 100, ReadOnly: true}, {Ptr: base + 512, N: 8}}, false},
		{"ramp filter", "ramp_filter_f32", new(driver.KernelArgs).Ptr(base).Ptr(base + 4096).Ptr(base + 8192).I64(3).I32(16),
			[]driver.Range{{Ptr: base, N: 192}, {Ptr: base + 4096, N: 192, ReadOnly: true}, {Ptr: base + 8192, N: 124, ReadOnly: true}}, false},
		{"backproject", "backproject_f64", new(driver.KernelArgs).Ptr(base).Ptr(base + 1<<16).Ptr(base + 1<<17).I64(2).I32(5).I32(7).I32(4).F64(v),
			[]driver.Range{{Ptr: base, N: 2 * 16 * 8}, {Ptr: base + 1<<16, N: 2 * 35 * 8, ReadOnly: true}, {Ptr: base + 1<<17, N: 80, ReadOnly: true}}, false},
		{"project", "project_f32", new(driver.KernelArgs).Ptr(base).Ptr(base + 1<<16).Ptr(base + 1<<17).I64(2).I32(5).I32(7).I32(4).F32(1),
			[]driver.Range{{Ptr: base, N: 2 * 35 * 4}, {Ptr: base + 1<<16, N: 2 * 16 * 4, ReadOnly: true}, {Ptr: base + 1<<17, N: 40, ReadOnly: true}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			em, err := Emulate(tc.kernel, packed(tc.args))
			require.NoError(t, err)
			assert.Equal(t, tc.ranges, em.Ranges)
			assert.Equal(t, tc.misaligned, em.Misaligned != "", "misaligned: %q", em.Misaligned)
			checkDeclaredAccess(t, tc.kernel, em)
		})
	}
}

// checkDeclaredAccess runs a launch's reference on random memory of its
// declared ranges, as a device would with nothing around them: a touch
// outside a range is a bounds panic, and a write to a range declared
// ReadOnly changes its bytes. sim's stream race checker trusts these
// declarations, so a kernel that wrote what it declares read-only would
// hide races.
func checkDeclaredAccess(t *testing.T, kernel string, em Emulation) {
	t.Helper()
	mem := make([][]byte, len(em.Ranges))
	before := make([][]byte, len(em.Ranges))
	for i, r := range em.Ranges {
		mem[i] = make([]byte, r.N)
		for j := range mem[i] {
			mem[i][j] = byte(rand.IntN(256))
		}
		before[i] = append([]byte(nil), mem[i]...)
	}
	require.NotPanics(t, func() { _ = em.Run(mem) }, "%s: the reference stays inside its declared ranges", kernel)
	for i, r := range em.Ranges {
		if r.ReadOnly {
			assert.Equal(t, before[i], mem[i], "%s: range %d is declared read-only, and the reference wrote it", kernel, i)
		}
	}
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// The emulated fill writes what the sim reference writes, through the
// ranges it names.
func TestEmulateRunsTheReference(t *testing.T) {
	const n = 257
	v := rand.Float32()
	em, err := Emulate("fill_f32", packed(new(driver.KernelArgs).Ptr(4096).Struct(fillLayout(n, 4).encode(), 8).F32(v)))
	require.NoError(t, err)
	mem := make([]byte, em.Ranges[0].N)
	require.NoError(t, em.Run([][]byte{mem}))
	for i := range n {
		require.Equal(t, v, math.Float32frombits(binary.LittleEndian.Uint32(mem[4*i:])), "element %d", i)
	}
}

// Names that are no kernel and parameters that do not fit are errors,
// never a panic.
func TestEmulateRefuses(t *testing.T) {
	bad := fillLayout(4, 4).encode()
	binary.LittleEndian.PutUint32(bad[8:], 99) // ndim
	for _, tc := range []struct {
		name, kernel string
		params       []byte
	}{
		{"unknown kernel", "nope_f32", nil},
		{"unknown suffix", "fill_f16", make([]byte, 160)},
		{"unknown item size", "pack_3", make([]byte, 160)},
		{"too short", "fill_f32", make([]byte, 12)},
		{"bad layout", "fill_f32", packed(new(driver.KernelArgs).Ptr(4096).Struct(bad, 8).F32(1))},
		{"negative count", "checksum", packed(new(driver.KernelArgs).Ptr(4096).I64(-1).Ptr(8192))},
	} {
		_, err := Emulate(tc.kernel, tc.params)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, tc.name)
	}
}

func FuzzEmulate(f *testing.F) {
	f.Add("fill_f32", packed(new(driver.KernelArgs).Ptr(4096).Struct(fillLayout(4, 4).encode(), 8).F32(1)))
	f.Add("phantom_f64", make([]byte, 1200))
	f.Add("unpack_16", make([]byte, 200))
	f.Fuzz(func(t *testing.T, name string, params []byte) {
		em, err := Emulate(name, params)
		if err != nil {
			return
		}
		var total int64
		for _, r := range em.Ranges {
			if r.N < 0 {
				t.Fatalf("%s: a range of %d bytes", name, r.N)
			}
			total += r.N
		}
		if total > 1<<16 {
			return
		}
		// The reference stays inside the ranges the launch declares: one
		// byte past them would panic here (a bounds check), as it faults on sim.
		mem := make([][]byte, len(em.Ranges))
		for i, r := range em.Ranges {
			mem[i] = make([]byte, r.N)
		}
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: the reference ran outside its declared ranges %v: %v", name, em.Ranges, r)
			}
		}()
		before := make([][]byte, len(mem))
		for i := range mem {
			for j := range mem[i] {
				mem[i][j] = byte(j*7 + i)
			}
			before[i] = append([]byte(nil), mem[i]...)
		}
		_ = em.Run(mem)
		for i, r := range em.Ranges {
			if r.ReadOnly && !bytesEqual(before[i], mem[i]) {
				t.Fatalf("%s: the reference wrote range %d, which it declares read-only", name, i)
			}
		}
	})
}
