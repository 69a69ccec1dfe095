package kernels_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
)

// copy_wide, the copy of contiguous ranges (the mapped path's), moves
// 16-byte words: its PTX loads and stores 128 bits at a time, which the
// other kernels' byte-wide pack does not.
func TestCopyWidePTXMovesWords(t *testing.T) {
	b, err := os.ReadFile("kernels.ptx")
	require.NoError(t, err)
	ptx := string(b)
	start := strings.Index(ptx, ".entry copy_wide(")
	require.GreaterOrEqual(t, start, 0, "kernels.ptx has copy_wide")
	body := ptx[start:]
	body = body[:strings.Index(body, "\n}\n")]
	loads := regexp.MustCompile(`ld\.global(\.nc)?\.v4\.(u32|b32)`).FindAllString(body, -1)
	stores := regexp.MustCompile(`st\.global\.v4\.(u32|b32)`).FindAllString(body, -1)
	assert.GreaterOrEqual(t, len(loads), 4, "128-bit loads, several in flight per thread")
	assert.GreaterOrEqual(t, len(stores), 4, "128-bit stores")
}

// Pack and Unpack of contiguous ranges at every alignment of source and
// destination mod 16, and lengths that are not multiples of 16: the bytes
// arrive, and the bytes beside the destination stay. Ranges at the same
// address mod 16 take copy_wide (head bytes, 16-byte words, tail bytes);
// the others the item-wise kernel.
func TestContiguousMovesAtEveryAlignment(t *testing.T) {
	dev, k := setup(t)
	const room = 4096
	src, err := devarray.Empty(dev, devarray.Uint8, room)
	require.NoError(t, err)
	defer src.Free()
	dst, err := devarray.Empty(dev, devarray.Uint8, room)
	require.NoError(t, err)
	defer dst.Free()
	lengths := []int{0, 1, 15, 17, 31, 33, 16*rand.IntN(100) + 1 + rand.IntN(15), room - 64 - rand.IntN(15)}
	for so := range 16 {
		for do := range 16 {
			n := lengths[rand.IntN(len(lengths))]
			data, background := randomBytes(room), randomBytes(room)
			require.NoError(t, src.CopyFrom(data))
			require.NoError(t, dst.CopyFrom(background))
			s, err := src.Slice(0, so, so+n, 1)
			require.NoError(t, err)
			d, err := dst.Slice(0, do, do+n, 1)
			require.NoError(t, err)
			move := k.Pack
			if rand.IntN(2) == 0 {
				move = k.Unpack
			}
			require.NoError(t, move(d, s), "source at %d, destination at %d mod 16, %d bytes", so, do, n)
			got, err := devarray.ToHost[uint8](dst)
			require.NoError(t, err)
			want := append([]byte(nil), background...)
			copy(want[do:do+n], data[so:so+n])
			require.Equal(t, want, got, "source at %d, destination at %d mod 16, %d bytes", so, do, n)
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}
