package accounting_test

import (
	rand "github.com/cuarray/cuarray/internal/testrand"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// FormatBytes never prints a figure of 1024.00 or more in a unit: a size
// just under a unit's boundary is written in the larger unit, so that a
// 1 GiB device less a granule reads "1.00 GiB" as the device does, not
// "1024.00 MiB".
func TestFormatBytesBoundaries(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{1023, "1023 B"},
		{1024, "1.00 KiB"},
		{1<<20 - 1, "1.00 MiB"},
		{1<<30 - 256, "1.00 GiB"},
		{1<<30 - 6<<20, "1018.00 MiB"},
		{1 << 30, "1.00 GiB"},
		{-(1<<30 - 256), "-1.00 GiB"},
		{3 << 40, "3.00 TiB"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, accounting.FormatBytes(tc.n), "FormatBytes(%d)", tc.n)
		})
	}
	figure := regexp.MustCompile(`^(-?\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB|PiB|EiB)$`)
	for range 1000 {
		n := rand.Int64N(1 << 50)
		s := accounting.FormatBytes(n)
		m := figure.FindStringSubmatch(s)
		require.NotNil(t, m, "FormatBytes(%d) = %q", n, s)
		f, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		assert.Less(t, f, 1024.0, "FormatBytes(%d) = %q: a figure under 1024 in its unit", n, s)
	}
}
