package driver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
)

// The two attributes' values map to an access and back, and each access
// has a name that parses back to it.
func TestPageableAccess(t *testing.T) {
	for _, tc := range []struct {
		access, tables int
		want           driver.PageableAccess
		name           string
		supported      bool
	}{
		{0, 0, driver.PageableNone, "none", false},
		{1, 0, driver.PageableHMM, "hmm", true},
		{1, 1, driver.PageableATS, "ats", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := driver.PageableAccessOf(tc.access, tc.tables)
			require.Equal(t, tc.want, a)
			assert.Equal(t, tc.supported, a.Supported())
			access, tables := a.Attributes()
			assert.Equal(t, []int{tc.access, tc.tables}, []int{access, tables})
			assert.Equal(t, tc.name, a.String())
			parsed, err := driver.ParsePageableAccess(tc.name)
			require.NoError(t, err)
			assert.Equal(t, a, parsed)
		})
	}
	assert.Equal(t, driver.PageableNone, driver.PageableAccessOf(0, 1), "no access: the page tables do not matter")
	assert.Equal(t, "PageableAccess(7)", driver.PageableAccess(7).String())
	_, err := driver.ParsePageableAccess("1")
	assert.ErrorIs(t, err, driver.ErrInvalidValue)
}

// FuzzParsePageableAccess: a string parses only to an access whose name
// it is.
func FuzzParsePageableAccess(f *testing.F) {
	for _, s := range []string{"none", "hmm", "ats", "", "HMM", "1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := driver.ParsePageableAccess(s)
		if err != nil {
			assert.ErrorIs(t, err, driver.ErrInvalidValue)
			return
		}
		assert.Equal(t, s, a.String())
	})
}
