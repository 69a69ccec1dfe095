package accounting

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A report's times are in µs below a millisecond, ms below a second, and s
// from there; a time never recorded (0, or not a number) is "-".
func TestReportDuration(t *testing.T) {
	for _, tc := range []struct {
		sec  float64
		want string
	}{
		{0, "-"},
		{math.NaN(), "-"},
		{-1e-6, "-"},
		{2.5e-7, "0.2 µs"},
		{999.5e-6, "999.5 µs"},
		{1e-3, "1.000 ms"},
		{0.25, "250.000 ms"},
		{1, "1.000 s"},
		{90.5, "90.500 s"},
	} {
		assert.Equal(t, tc.want, duration(tc.sec), "%g s", tc.sec)
	}
}
