//go:build cgo

package main

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// cuarray_ledger_report is the device's ledger as Go's Ledger.Report()
// writes it, counts of this call's copies included; a handle that is no
// device is an error. The device lives as long as the process, so the
// upload is counted against what the ledger held before it.
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
	before := d.Ledger().Snapshot().Copies[accounting.HtoD][accounting.PathDirect]
	require.NoError(t, copyHost(a, unsafe.Pointer(&data[0]), int64(4*n), true))

	got, err := ledgerReport(h)
	require.NoError(t, err)
	assert.Equal(t, d.Ledger().Report(), string(got))
	assert.Contains(t, string(got), "ledger sim:43\n")
	after := d.Ledger().Snapshot().Copies[accounting.HtoD][accounting.PathDirect]
	assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: int64(4 * n)},
		accounting.CopyStats{Count: after.Count - before.Count, Bytes: after.Bytes - before.Bytes}, "the upload is counted")
	assert.Regexp(t, fmt.Sprintf(`\n  HtoD  direct +%d +`, after.Count), string(got), "the report shows the count")

	_, err = ledgerReport(0)
	assert.ErrorIs(t, err, errHandle, "host memory has no device")
	_, err = ledgerReport(a)
	assert.ErrorIs(t, err, errHandle, "an array's handle")
	_, err = ledgerReport(1 << 60)
	assert.ErrorIs(t, err, errHandle, "no such handle")
}
