//go:build cuda

package cuda

import cu "gorgonia.org/cu"

// The cuda build needs cuarray's patched copy of gorgonia.org/cu v0.9.6
// (third_party/gorgonia-cu: no cuInit at start, libcuda loaded on first
// use). A module of your own gets it from a replace directive in its go.mod:
//
//	replace gorgonia.org/cu v0.9.6 => ../cuarray/third_party/gorgonia-cu
//
// (the path to your clone of cuarray), or from a workspace that holds both
// modules, which applies cuarray's own replace: go work init . ../cuarray.
// Without either, the build stops here, at its first error, whose name says
// what to add:
//
//	undefined: cu.YourGoModNeeds_replace_gorgonia_org_cu_v0_9_6_with_cuarray_third_party_gorgonia_cu
const _ = cu.YourGoModNeeds_replace_gorgonia_org_cu_v0_9_6_with_cuarray_third_party_gorgonia_cu
