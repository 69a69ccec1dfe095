package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/transfer"
)

// FuzzParseRoute: a string parses only to the route whose name it is,
// one of Routes.
func FuzzParseRoute(f *testing.F) {
	for _, s := range []string{"pinned", "managed-prefetch", "pageable-in-place", "", "Managed", "Route(9)", "staged "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := transfer.ParseRoute(s)
		if err != nil {
			assert.ErrorIs(t, err, transfer.ErrUnknownName)
			return
		}
		assert.Contains(t, transfer.Routes(), r)
		assert.Equal(t, s, r.String())
	})
}
