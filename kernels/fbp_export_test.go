package kernels

import (
	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
)

// BackprojectWith runs Backproject with the one-thread-per-pixel kernel
// (tiled false) or the tiled one, whatever the geometry: the GPU tests and
// benchmarks compare the two. On sim both run the Go reference.
func (k *Kernels) BackprojectWith(img, sino *devarray.DevArray, ws *accounting.Workspace, tiled bool) error {
	if tiled {
		return k.backproject(img, sino, ws, bpTiled)
	}
	return k.backproject(img, sino, ws, bpPlain)
}
