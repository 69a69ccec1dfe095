// Package ownptx holds the PTX of the guide's own kernels, saxpy.cu and
// stencil.cu beside it in examples/ownkernels, as nvcc -ptx wrote it
// (make example-ptx), so that the guide's samples load it from any
// directory: a program of your own that imports this package needs no
// file beside it.
//
// Your own kernels' PTX is a file you load by its path, or embed:
//
//	mod, err := kernel.LoadFile(dev, "saxpy.ptx") // nvcc -ptx's output, or a fatbin
//	mod, err := kernel.Load(dev, ownptx.Saxpy)    // the same PTX, from this package
//
// The constants are generated from ../saxpy.ptx and ../stencil.ptx (go
// generate, which make example-ptx runs); examples/ownkernels' tests fail
// when they differ from those files.
package ownptx

//go:generate go run gen.go
