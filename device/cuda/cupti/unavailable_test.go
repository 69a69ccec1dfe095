//go:build !cuda || !linux

package cupti

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenWithoutTheCudaBuild(t *testing.T) {
	lib, err := Open()
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Nil(t, lib)
	assert.Contains(t, err.Error(), "-tags cuda", "says why")
}
