//go:build cgo

package main

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cuarray_ledger_report is the device's ledger as Go's Ledger.Report()
// writes it, counts of this call's copies included; a handle that is no
// device is an error.
func TestLedgerReport(t *testing.T) {
	h, err := openDevice("sim:43?mem=64MiB")
	require.NoError(t, err)
	d, err := deviceOf(h)
	require.NoError(t, err)
	n := 2 + rand.IntN(200)
	data := make([]float32, n)
	for i := range data {
		data[i] = 1 + rand.Float32()
	}
	a, err := empty(h, "float32", []int{n}, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, releaseArray(a)) }()
	require.NoError(t, copyHost(a, unsafe.Pointer(&data[0]), int64(4*n), true))

	got, err := ledgerReport(h)
	require.NoError(t, err)
	assert.Equal(t, d.Ledger().Report(), string(got))
	assert.Contains(t, string(got), "ledger sim:43\n")
	assert.Regexp(t, `\n  HtoD  direct +1 +\d+ B `, string(got), "the upload is counted")

	_, err = ledgerReport(0)
	assert.ErrorIs(t, err, errHandle, "host memory has no device")
	_, err = ledgerReport(a)
	assert.ErrorIs(t, err, errHandle, "an array's handle")
	_, err = ledgerReport(1 << 60)
	assert.ErrorIs(t, err, errHandle, "no such handle")
}
