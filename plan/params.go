package plan

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Parameterized is a Method that says which parameters it takes: each
// parameter's name with the least value it takes (math.MinInt for any).
// The methods of package kernels and Identity implement it; a Method that
// does not is asked only through MaxSlices and Run.
type Parameterized interface {
	Method
	Parameters() map[string]int
}

// DescribeParams says which parameters m takes, for a person: "size ≥ 1",
// "angles ≥ 1, detectors ≥ 1", "factor", "none"; "not listed" when m is not
// Parameterized.
func DescribeParams(m Method) string {
	p, ok := m.(Parameterized)
	if !ok {
		return "not listed"
	}
	params := p.Parameters()
	if len(params) == 0 {
		return "none"
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if lo := params[name]; lo != math.MinInt {
			parts = append(parts, fmt.Sprintf("%s ≥ %d", name, lo))
		} else {
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, ", ")
}

// CheckParamNames returns an error wrapping ErrParam for the first name in
// params that m does not take, saying which it does; nil when every name
// is one m takes, or when m is not Parameterized.
func CheckParamNames(m Method, params Params) error {
	p, ok := m.(Parameterized)
	if !ok {
		return nil
	}
	takes := p.Parameters()
	for _, name := range slices.Sorted(maps.Keys(params)) {
		if _, ok := takes[name]; !ok {
			return fmt.Errorf("%s takes no parameter %q (its parameters: %s): %w", m.Name(), name, DescribeParams(m), ErrParam)
		}
	}
	return nil
}

// methodString is a method's String: its name and its parameters.
func methodString(m Method) string {
	return fmt.Sprintf("%s (a plan.Method; parameters: %s)", m.Name(), DescribeParams(m))
}

// MethodString is what a Method's String says: "fbp.reconstruct (a
// plan.Method; parameters: size ≥ 1)".
func MethodString(m Method) string {
	if m == nil {
		return "plan.Method(nil)"
	}
	return methodString(m)
}
