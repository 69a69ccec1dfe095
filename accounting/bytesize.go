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
	"p": 1 << 50, "pib": 1 << 50, "pb": 1e15,
	"e": 1 << 60, "eib": 1 << 60, "eb": 1e18,
}

// ParseBytes parses a byte count such as "4096", "256MiB", "1.5 GiB" or
// "2GB". Binary units (KiB, MiB, GiB, TiB, PiB, EiB, and the bare K, M, G,
// T, P, E) are powers of 1024, decimal units (kB, MB, GB, TB, PB, EB)
// powers of 1000; case is ignored. The result must be a whole,
// non-negative number of bytes that fits in int64 (below 8 EiB). Every
// error wraps ErrInvalidArgument and says which of these rules failed.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "-") {
		return 0, fmt.Errorf("accounting: byte size %q is negative: %w", s, ErrInvalidArgument)
	}
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	mult, ok := byteUnits[strings.ToLower(unit)]
	switch {
	case num == "":
		return 0, fmt.Errorf("accounting: byte size %q: want a number and an optional unit like 256MiB or 2GB: %w", s, ErrInvalidArgument)
	case !ok:
		return 0, fmt.Errorf("accounting: byte size %q: unknown unit %q (want B, KiB, MiB, GiB, TiB, PiB, EiB, or kB, MB, GB, TB, PB, EB): %w", s, unit, ErrInvalidArgument)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err == nil {
			if m := int64(mult); n <= math.MaxInt64/m {
				return n * m, nil
			}
		}
		return 0, fmt.Errorf("accounting: byte size %q does not fit in 64 bits (the most is 8 EiB less one byte): %w", s, ErrInvalidArgument)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("accounting: byte size %q: %v: %w", s, err, ErrInvalidArgument)
	}
	v := f * mult
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("accounting: byte size %q does not fit in 64 bits (the most is 8 EiB less one byte): %w", s, ErrInvalidArgument)
	}
	if v != math.Trunc(v) {
		return 0, fmt.Errorf("accounting: byte size %q is not a whole number of bytes: %w", s, ErrInvalidArgument)
	}
	return int64(v), nil
}
