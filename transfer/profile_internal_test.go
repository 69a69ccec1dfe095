package transfer

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/device/driver"
)

// ParseProfile reads a profile of up to maxProfileBytes (here padded with
// spaces to exactly that) and refuses one a byte longer unread.
func TestParseProfileSizeLimit(t *testing.T) {
	data, err := DefaultProfile(driver.Info{Backend: "cuda", Model: "a GPU"}).JSON()
	require.NoError(t, err)
	require.Less(t, len(data), maxProfileBytes)
	full := append(data, bytes.Repeat([]byte{' '}, maxProfileBytes-len(data))...)
	p, err := ParseProfile(full)
	require.NoError(t, err)
	assert.Equal(t, "a GPU", p.Model)
	_, err = ParseProfile(append(full, ' '))
	assert.ErrorIs(t, err, ErrProfile)
}
