package kernels

import (
	"maps"

	"github.com/cuarray/cuarray/plan"
)

// The kernels' methods say which parameters they take (plan.Parameterized)
// and print as their name and those parameters, not as an empty struct.

// Parameters returns factor, any integer.
func (scaleMethod) Parameters() map[string]int { return maps.Clone(scaleParams) }

// Parameters returns none.
func (transposeMethod) Parameters() map[string]int { return maps.Clone(noParams) }

// Parameters returns none.
func (filterMethod) Parameters() map[string]int { return maps.Clone(noParams) }

// Parameters returns size, at least 1.
func (backprojectMethod) Parameters() map[string]int { return maps.Clone(backprojectParams) }

// Parameters returns size, at least 1.
func (reconstructMethod) Parameters() map[string]int { return maps.Clone(backprojectParams) }

// Parameters returns angles and detectors, each at least 1.
func (projectMethod) Parameters() map[string]int { return maps.Clone(projectParams) }

// String is "kernels.scale (a plan.Method; parameters: factor)".
func (m scaleMethod) String() string { return plan.MethodString(m) }

// String is "kernels.transpose (a plan.Method; parameters: none)".
func (m transposeMethod) String() string { return plan.MethodString(m) }

// String is "fbp.filter (a plan.Method; parameters: none)".
func (m filterMethod) String() string { return plan.MethodString(m) }

// String is "fbp.backproject (a plan.Method; parameters: size ≥ 1)".
func (m backprojectMethod) String() string { return plan.MethodString(m) }

// String is "fbp.reconstruct (a plan.Method; parameters: size ≥ 1)".
func (m reconstructMethod) String() string { return plan.MethodString(m) }

// String is "fbp.project (a plan.Method; parameters: angles ≥ 1, detectors ≥ 1)".
func (m projectMethod) String() string { return plan.MethodString(m) }

var (
	_ plan.Parameterized = scaleMethod{}
	_ plan.Parameterized = transposeMethod{}
	_ plan.Parameterized = filterMethod{}
	_ plan.Parameterized = backprojectMethod{}
	_ plan.Parameterized = reconstructMethod{}
	_ plan.Parameterized = projectMethod{}
)
