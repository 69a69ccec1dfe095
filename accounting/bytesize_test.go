package accounting_test

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"4096", 4096}, {"1KiB", 1024}, {"1kb", 1000}, {"256MiB", 256 << 20},
		{"1.5 GiB", 3 << 29}, {"2GB", 2e9}, {"4G", 4 << 30}, {" 7 b ", 7}, {"1TiB", 1 << 40},
		{"1PiB", 1 << 50}, {"1EiB", 1 << 60}, {"7.5 EiB", 15 << 59}, {"2EB", 2e18},
		// the most each unit holds: 8 EiB less one byte, less what the unit cannot say
		{"9223372036854775807", math.MaxInt64}, {"9223372036854775807 B", math.MaxInt64},
		{"8796093022207MiB", 8796093022207 << 20}, {"9223372036854775KB", 9223372036854775000},
	}
	for _, tt := range tests {
		got, err := accounting.ParseBytes(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"", "MiB", "-1", "1.2.3GiB", "12 parsecs", "0.3B", "9223372036854775807KiB", "1e3", "99999999999999999999",
		"8796093022208MiB", "8.0EiB", "8.0 EiB", "9223372036854775808"} {
		_, err := accounting.ParseBytes(bad)
		assert.ErrorIs(t, err, accounting.ErrInvalidArgument, "%q must be refused", bad)
	}
	// Each refusal says which rule failed (cuarray -mem 1EiB said "want a
	// number and an optional unit" for a number with a unit it lacked).
	for in, want := range map[string]string{
		"8EiB": "does not fit in 64 bits", "1ZiB": `unknown unit "ZiB"`, "-1MiB": "negative", "MiB": "want a number",
	} {
		_, err := accounting.ParseBytes(in)
		assert.ErrorContains(t, err, want, in)
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"256MiB", "1.5 GiB", "0", "9223372036854775807", "1e9", "-3", "7.25kb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := accounting.ParseBytes(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseBytes(%q) = %d, negative", s, n)
		}
		// Whatever parses is a byte count that reads back exactly in plain digits.
		back := strconv.FormatInt(n, 10)
		m, err := accounting.ParseBytes(back)
		if err != nil || m != n {
			t.Fatalf("ParseBytes(%q) = %d, but ParseBytes(%q) = %d, %v", s, n, back, m, err)
		}
	})
}
