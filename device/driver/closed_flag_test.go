package driver_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cuarray/cuarray/device/driver"
)

// A ClosedFlag reads its device's flag as it is now; the zero one reads
// none and says open.
func TestClosedFlag(t *testing.T) {
	var zero driver.ClosedFlag
	assert.False(t, zero.Valid())
	assert.False(t, zero.Closed())

	var flag atomic.Bool
	f := driver.NewClosedFlag(&flag)
	assert.True(t, f.Valid())
	for _, closed := range []bool{false, true, false, true} {
		flag.Store(closed)
		assert.Equal(t, closed, f.Closed())
	}
}
