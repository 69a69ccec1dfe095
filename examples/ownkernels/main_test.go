package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/examples/ownkernels/ownptx"
	"github.com/cuarray/cuarray/internal/testdev"
)

// TestOwnKernelsMatchTheirGoReferences runs the program on the test device
// (sim, or the emulated driver in make cuda-emu-test, or a GPU) at sizes
// that do and do not fill whole blocks and tiles, on fresh random data:
// run fails unless every element equals its Go reference bit for bit.
func TestOwnKernelsMatchTheirGoReferences(t *testing.T) {
	for _, tc := range []struct{ n, size int }{{1, 1}, {1000, 17}, {4096, 48}} {
		t.Run(fmt.Sprintf("n=%d,size=%d", tc.n, tc.size), func(t *testing.T) {
			dev := testdev.Open(t)
			var out bytes.Buffer
			seed := testdev.RandomBytes(1)[0]
			require.NoError(t, run(&out, dev, tc.n, tc.size, uint64(seed)+1))
			s := out.String()
			assert.Contains(t, s, fmt.Sprintf("saxpy: %d elements on", tc.n))
			assert.Contains(t, s, fmt.Sprintf("laplacian: %d×%d image", tc.size, tc.size))
			assert.Equal(t, 2, strings.Count(s, "equal to the Go reference bit for bit"))
			assert.Contains(t, s, "ledger: laplacian launched 1 time(s)")
			assert.Contains(t, s, "ledger: saxpy launched 1 time(s)")
		})
	}
}

// TestOwnKernelsRefusesBadSizes: sizes below one are an error, not a
// launch.
func TestOwnKernelsRefusesBadSizes(t *testing.T) {
	dev := testdev.Open(t)
	var out bytes.Buffer
	require.ErrorContains(t, run(&out, dev, 0, 8, 1), "at least 1")
	require.ErrorContains(t, run(&out, dev, 8, -1, 1), "at least 1")
	assert.Empty(t, out.String())
}

// TestOwnPTXIsThePTXHere: package ownptx, which the guide's samples load
// so that they run from any directory, holds this directory's PTX files as
// they are.
func TestOwnPTXIsThePTXHere(t *testing.T) {
	assert.Equal(t, saxpyPTX, ownptx.Saxpy, "ownptx.Saxpy is not saxpy.ptx: go generate ./examples/ownkernels/ownptx")
	assert.Equal(t, stencilPTX, ownptx.Stencil, "ownptx.Stencil is not stencil.ptx: go generate ./examples/ownkernels/ownptx")
}
