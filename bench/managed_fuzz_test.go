package bench_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/bench"
	"github.com/cuarray/cuarray/device/driver"
)

// FuzzParseManagedPath: a string parses only to the managed path whose
// name it is; anything else is driver.ErrInvalidValue.
func FuzzParseManagedPath(f *testing.F) {
	for _, s := range []string{"managed", "managed-prefetch", "managed-read-mostly", "", "all", "MANAGED", "managed\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := bench.ParseManagedPath(s)
		if err != nil {
			assert.ErrorIs(t, err, driver.ErrInvalidValue)
			return
		}
		assert.Contains(t, bench.ManagedPaths, p)
		assert.Equal(t, s, string(p))
	})
}
