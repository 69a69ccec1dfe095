//go:build tools

// Package deps pins modules that later parts of cuarray build on, so that
// go.mod and go.sum hold their exact versions before any default-build code
// imports them. The "tools" build tag keeps this file out of every build:
// gorgonia.org/cu is linked only into the cuda build (-tags cuda; see
// DESIGN.md). Upstream's package init exits the process when no GPU answers;
// cuarray uses a patched copy whose cuInit is lazy (third_party/gorgonia-cu).
package deps

import (
	_ "go4.org/unsafe/assume-no-moving-gc"
	_ "gorgonia.org/cu"
	_ "gorgonia.org/tensor"
)
