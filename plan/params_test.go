package plan_test

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/plan"
)

// Identity says it takes no parameter, prints its name, and refuses any
// parameter by name; a Method that does not list its parameters is not
// checked by name.
func TestIdentityParameters(t *testing.T) {
	m, err := plan.Default.Lookup("identity")
	require.NoError(t, err)
	assert.Equal(t, "none", plan.DescribeParams(m))
	assert.Equal(t, "identity (a plan.Method; parameters: none)", fmt.Sprintf("%v", m))
	name := fmt.Sprintf("p%d", rand.IntN(1000))
	err = plan.CheckParamNames(m, plan.Params{name: rand.IntN(100)})
	assert.ErrorIs(t, err, plan.ErrParam)
	assert.Contains(t, err.Error(), fmt.Sprintf("identity takes no parameter %q", name))
	assert.NoError(t, plan.CheckParamNames(m, nil))
	assert.Equal(t, "plan.Method(nil)", plan.MethodString(nil))
}
