package kernels_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/kernels"
	"github.com/cuarray/cuarray/plan"
)

// The kernels' methods print as their name and parameters, with every
// verb, whether held as a variable or looked up in the registry; an
// unknown parameter's error names the ones the method takes.
func TestMethodsPrint(t *testing.T) {
	for _, tc := range []struct {
		m    plan.Method
		want string
	}{
		{kernels.ScaleMethod, "kernels.scale (a plan.Method; parameters: factor)"},
		{kernels.TransposeMethod, "kernels.transpose (a plan.Method; parameters: none)"},
		{kernels.FilterMethod, "fbp.filter (a plan.Method; parameters: none)"},
		{kernels.BackprojectMethod, "fbp.backproject (a plan.Method; parameters: size ≥ 1)"},
		{kernels.ReconstructMethod, "fbp.reconstruct (a plan.Method; parameters: size ≥ 1)"},
		{kernels.ProjectMethod, "fbp.project (a plan.Method; parameters: angles ≥ 1, detectors ≥ 1)"},
	} {
		t.Run(tc.m.Name(), func(t *testing.T) {
			looked, err := plan.Default.Lookup(tc.m.Name())
			require.NoError(t, err)
			for _, verb := range []string{"%v", "%+v", "%s"} {
				assert.Equal(t, tc.want, fmt.Sprintf(verb, tc.m), verb)
				assert.Equal(t, tc.want, fmt.Sprintf(verb, looked), "%s of the registry's", verb)
			}
			assert.NotEqual(t, "{}", fmt.Sprint(looked))
			err = plan.CheckParamNames(tc.m, plan.Params{"bogus": 1})
			require.ErrorIs(t, err, plan.ErrParam)
			assert.Contains(t, err.Error(), fmt.Sprintf(`%s takes no parameter "bogus" (its parameters: %s)`, tc.m.Name(), plan.DescribeParams(tc.m)))
		})
	}
}
