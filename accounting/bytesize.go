package accounting

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
	"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
	"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	"t": 1 << 40, "tib": 1 << 40, "tb": 1e12,
}

// ParseBytes parses a byte count such as "4096", "256MiB", "1.5 GiB" or
// "2GB". Binary units (KiB, MiB, GiB, TiB, and the bare K, M, G, T) are powers
// of 1024, decimal units (kB, MB, GB, TB) powers of 1000; case is ignored.
// The result must be a whole, non-negative number of bytes that fits in int64.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("accounting: byte size %q: want a number and an optional unit like 256MiB or 2GB", s)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err == nil {
			if m := int64(mult); n <= math.MaxInt64/m {
				return n * m, nil
			}
		}
		return 0, fmt.Errorf("accounting: byte size %q does not fit in 64 bits", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("accounting: byte size %q: %v", s, err)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("accounting: byte size %q does not fit in 64 bits", s)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("accounting: byte size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}
