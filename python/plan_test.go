package python_test

import (
	"context"
	"encoding/json"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	_ "github.com/cuarray/cuarray/kernels" // the built-in methods, as libcuarray has them
	"github.com/cuarray/cuarray/plan"
)

// planCase is one calc_max_slices question, with the Go planner's answer.
type planCase struct {
	Method    string         `json:"method"`
	SliceDim  int            `json:"slice_dim"`
	Other     [2]int         `json:"other_dims"`
	DType     string         `json:"dtype"`
	Available int64          `json:"available_memory"`
	Raw       bool           `json:"raw"`
	Params    map[string]int `json:"params"`
	Want      int            `json:"-"`
	WantOut   string         `json:"-"`
}

// askPython runs cuarray.plan.calc_max_slices for each case in one Python
// process and returns its answers: [max_slices, out_dtype name].
const askPython = `
import json, sys
import numpy as np
import cuarray
out = []
for c in json.load(sys.stdin):
    n, dt = cuarray.plan.calc_max_slices(c["method"], c["slice_dim"], tuple(c["other_dims"]), np.dtype(c["dtype"]),
                                         c["available_memory"], raw=c["raw"], **(c["params"] or {}))
    assert type(n) is int and isinstance(dt, np.dtype), (n, dt)
    out.append([n, dt.name])
json.dump(out, sys.stdout)
`

// checkCalcMaxSlices: Python's cuarray.plan.calc_max_slices answers what
// the Go planner answers, for every built-in method, over random shapes,
// dtypes, memories and parameters, raw and not.
func checkCalcMaxSlices(t *testing.T, py, lib string) {
	params := map[string]func() map[string]int{
		"fbp.backproject": func() map[string]int { return map[string]int{"size": 1 + rand.IntN(512)} },
		"fbp.reconstruct": func() map[string]int { return map[string]int{"size": 1 + rand.IntN(512)} },
		"fbp.project": func() map[string]int {
			return map[string]int{"angles": 1 + rand.IntN(360), "detectors": 1 + rand.IntN(512)}
		},
		"kernels.scale": func() map[string]int { return map[string]int{"factor": rand.IntN(10) - 5} },
	}
	var cases []planCase
	for _, name := range plan.Default.Names() {
		m, err := plan.Default.Lookup(name)
		require.NoError(t, err)
		for i := range 12 {
			c := planCase{
				Method:    name,
				Other:     [2]int{1 + rand.IntN(1000), 1 + rand.IntN(1000)},
				DType:     []string{"float32", "float64"}[rand.IntN(2)],
				Available: rand.Int64N(1 << 36),
				Raw:       i%2 == 1,
			}
			if !strings.HasPrefix(name, "fbp.") {
				c.SliceDim = rand.IntN(3) // the FBP methods take sinograms along axis 0
			}
			if p, ok := params[name]; ok && i%3 != 0 {
				c.Params = p()
			}
			mode := plan.Device
			if c.Raw {
				mode = plan.Raw
			}
			dt, err := devarray.ParseDType(c.DType)
			require.NoError(t, err)
			var out devarray.DType
			c.Want, out, err = plan.Estimate(m, mode, c.SliceDim, c.Other, dt, c.Available, plan.Params(c.Params))
			require.NoError(t, err, "%+v", c)
			c.WantOut = out.String()
			cases = append(cases, c)
		}
	}
	in, err := json.Marshal(cases)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", askPython)
	cmd.Env = append(os.Environ(), "CUARRAY_LIB="+lib)
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	require.NoError(t, err, "python: %s", stderr.String())
	var answers [][2]any
	require.NoError(t, json.Unmarshal(got, &answers), "%s", got)
	require.Len(t, answers, len(cases))
	for i, c := range cases {
		what := fmt.Sprintf("%s(%d, %v, %s, %d, raw=%v, %v)", c.Method, c.SliceDim, c.Other, c.DType, c.Available, c.Raw, c.Params)
		assert.Equal(t, float64(c.Want), answers[i][0], what)
		assert.Equal(t, c.WantOut, answers[i][1], what)
	}
	t.Logf("%d cases over %d methods: Python's calc_max_slices is the Go planner's answer", len(cases), len(plan.Default.Names()))
}
