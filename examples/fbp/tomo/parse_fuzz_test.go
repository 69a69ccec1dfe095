package tomo_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/examples/fbp/tomo"
)

// FuzzParseMode: a string parses only to one of Modes, by its name.
func FuzzParseMode(f *testing.F) {
	for _, s := range []string{"resident", "staged", "", "Resident", "staged\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := tomo.ParseMode(s)
		if err != nil {
			assert.ErrorContains(t, err, "want resident or staged")
			return
		}
		assert.Contains(t, tomo.Modes, m)
		assert.Equal(t, s, string(m))
	})
}

// FuzzParseMemory: a string parses only to one of Memories, by its name.
func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"device", "managed", "", "unified", "Managed", "device "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := tomo.ParseMemory(s)
		if err != nil {
			assert.ErrorContains(t, err, "want device or managed")
			return
		}
		assert.Contains(t, tomo.Memories, m)
		assert.Equal(t, s, string(m))
	})
}
