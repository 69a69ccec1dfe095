package accounting_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/accounting"
)

// FuzzParseKind: a string parses only to the memory kind whose name it
// is; anything else is ErrInvalidArgument.
func FuzzParseKind(f *testing.F) {
	for _, s := range []string{"device", "managed", "pinned", "", "Device", "managed\x00", "Kind(3)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := accounting.ParseKind(s)
		if err != nil {
			assert.ErrorIs(t, err, accounting.ErrInvalidArgument)
			return
		}
		assert.Less(t, k, accounting.NumKinds)
		assert.Equal(t, s, k.String())
	})
}

// FuzzParsePath: a string parses only to the copy path whose name it is;
// anything else is ErrInvalidArgument.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"migrated", "prefetch", "pageable", "pinned", "", "PINNED", "Path(9)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := accounting.ParsePath(s)
		if err != nil {
			assert.ErrorIs(t, err, accounting.ErrInvalidArgument)
			return
		}
		assert.Less(t, p, accounting.NumPaths)
		assert.Equal(t, s, p.String())
	})
}
