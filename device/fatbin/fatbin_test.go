package fatbin

import (
	"bytes"
	"encoding/binary"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// instructions returns PTX text without comments, blank lines and
// indentation: what nvcc keeps of kernels.ptx in the fatbin.
func instructions(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if c := strings.Index(l, "//"); c >= 0 {
			l = l[:c]
		}
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return out
}

// The project's fatbin holds sm_90 machine code and compressed compute_70
// PTX, which decompresses to the instructions of kernels.ptx beside it.
func TestProjectFatbin(t *testing.T) {
	image, err := os.ReadFile("../../kernels/kernels.fatbin")
	require.NoError(t, err)
	text, err := os.ReadFile("../../kernels/kernels.ptx")
	require.NoError(t, err)
	require.True(t, Is(image))
	assert.Equal(t, len(image), Size(image))
	es, err := Entries(image)
	require.NoError(t, err)
	require.Len(t, es, 2)
	assert.Equal(t, KindCubin, es[0].Kind)
	assert.Equal(t, 90, es[0].Arch)
	assert.False(t, es[0].Compressed)
	cubin, err := es[0].Bytes()
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(cubin, []byte("\x7fELF")))
	assert.Equal(t, KindPTX, es[1].Kind)
	assert.True(t, es[1].Compressed, "nvcc compresses the PTX")

	ptx, arch, err := PTX(image)
	require.NoError(t, err)
	assert.Equal(t, 70, arch)
	assert.Equal(t, instructions(string(text)), instructions(ptx))
}

// compressLZ4 is a small greedy LZ4 block encoder: matches of 4 or more
// bytes found through a hash of 4 bytes, literals otherwise.
func compressLZ4(src []byte) []byte {
	var out []byte
	putLen := func(n int) {
		for ; n >= 255; n -= 255 {
			out = append(out, 255)
		}
		out = append(out, byte(n))
	}
	seq := func(lits []byte, off, match int) {
		tok := byte(0)
		if len(lits) >= 15 {
			tok = 15 << 4
		} else {
			tok = byte(len(lits)) << 4
		}
		if match > 0 {
			if match-4 >= 15 {
				tok |= 15
			} else {
				tok |= byte(match - 4)
			}
		}
		out = append(out, tok)
		if len(lits) >= 15 {
			putLen(len(lits) - 15)
		}
		out = append(out, lits...)
		if match > 0 {
			out = binary.LittleEndian.AppendUint16(out, uint16(off))
			if match-4 >= 15 {
				putLen(match - 4 - 15)
			}
		}
	}
	table := map[uint32]int{}
	start := 0
	for i := 0; i+12 <= len(src); {
		h := binary.LittleEndian.Uint32(src[i:])
		j, ok := table[h]
		table[h] = i
		if !ok || i-j > 65535 {
			i++
			continue
		}
		m := 0
		for i+m+5 < len(src) && src[j+m] == src[i+m] {
			m++
		}
		if m < 4 {
			i++
			continue
		}
		seq(src[start:i], i-j, m)
		i += m
		start = i
	}
	seq(src[start:], 0, 0)
	return out
}

func TestDecodeLZ4(t *testing.T) {
	words := []string{"ld.global.f32", "st.global.f32", "%r", "%fd", "add.s64", ";\n", "\t", "bra $L__BB0_"}
	var text strings.Builder
	for range 2000 + rand.IntN(2000) {
		text.WriteString(words[rand.IntN(len(words))])
		if rand.IntN(3) == 0 {
			text.WriteByte(byte('0' + rand.IntN(10)))
		}
	}
	noise := make([]byte, 500+rand.IntN(500))
	for i := range noise {
		noise[i] = byte(rand.Uint32())
	}
	for _, tc := range []struct {
		name string
		src  []byte
	}{
		{"PTX-like text", []byte(text.String())},
		{"incompressible bytes", noise},
		{"one byte repeated", bytes.Repeat([]byte{byte(rand.Uint32())}, 1000+rand.IntN(1000))},
		{"short", []byte("abc")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			block := compressLZ4(tc.src)
			got, err := decodeLZ4(block, len(tc.src))
			require.NoError(t, err)
			assert.Equal(t, tc.src, got)
			_, err = decodeLZ4(block, len(tc.src)+1)
			assert.Error(t, err, "a size the block does not make")
			if len(block) > 2 {
				_, err = decodeLZ4(block[:len(block)-2], len(tc.src))
				assert.Error(t, err, "a block cut short")
			}
		})
	}
}

func TestMalformed(t *testing.T) {
	image, err := os.ReadFile("../../kernels/kernels.fatbin")
	require.NoError(t, err)
	corrupt := func(off int, v uint64, n int) []byte {
		b := bytes.Clone(image)
		for i := range n {
			b[off+i] = byte(v >> (8 * i))
		}
		return b
	}
	second := 16 + 64 + 476592 // the PTX entry's header
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"not a fatbin", []byte("not a fatbin at all")},
		{"cut short", image[:len(image)/2]},
		{"an entry larger than the fatbin", corrupt(16+8, 1<<40, 8)},
		{"a header smaller than its fields", corrupt(16+4, 8, 4)},
		{"a huge uncompressed size", corrupt(second+56, 1<<40, 8)},
		{"a wrong uncompressed size", corrupt(second+56, 1000, 8)},
		{"a block cut short", corrupt(second+16, 1000, 4)},
		{"a match before the start", corrupt(second+72, 0x0f, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := PTX(tc.b)
			require.Error(t, err)
		})
	}
}

func FuzzPTX(f *testing.F) {
	image, err := os.ReadFile("../../kernels/kernels.fatbin")
	require.NoError(f, err)
	f.Add(image[:4096])
	f.Add(image)
	f.Fuzz(func(t *testing.T, b []byte) {
		PTX(b)
	})
}

func FuzzDecodeLZ4(f *testing.F) {
	f.Add(compressLZ4([]byte(strings.Repeat("ld.global.f32 %f1, [%rd4];\n", 20))), 540)
	f.Fuzz(func(t *testing.T, block []byte, size int) {
		if size < 0 || size > 1<<20 {
			return
		}
		if out, err := decodeLZ4(block, size); err == nil {
			require.Len(t, out, size)
		}
	})
}
