package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	_ "github.com/cuarray/cuarray/kernels" // registers the kernels' and FBP's methods
	"github.com/cuarray/cuarray/plan"
	"github.com/cuarray/cuarray/transfer"
)

// planReport is what `cuarray plan -json` prints: one object for one
// method, an array of them for several (Error set where a method could
// not plan the job).
type planReport struct {
	Device string `json:"device"`
	plan.Plan
	Limit int64  `json:"limit_bytes,omitempty"`
	Error string `json:"error,omitempty"`
	// Transfers compare the transfer paths of the largest chunk's input
	// and output (-paths).
	Transfers []routeTable `json:"transfers,omitempty"`
}

// planProgressAfter is how long `cuarray plan` over several methods runs
// before it shows progress on stderr (tests shorten it).
var planProgressAfter = time.Second

// runPlan answers "how many slices fit?" for a registered method, or
// several, and splits the job into chunks.
func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dev := fs.String("device", "", "device spec; its free memory is what the plan fits into")
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	method := fs.String("method", "", "method name (required), several as a,b, or all; list prints them")
	shapeArg := fs.String("shape", "", "the 3-D input shape, as 2048,720,1024")
	axis := fs.Int("axis", 0, "the slice axis")
	dtypeArg := fs.String("dtype", "float32", "the input dtype")
	memArg := fs.String("mem", "", "a device memory limit, as 8GiB or 14450B (default: the device's free memory); past the size of a sim left at its default size, sim is made that large")
	overhead := fs.Float64("overhead", accounting.DefaultOverhead, "the factor the available memory is divided by")
	raw := fs.Bool("raw", false, "httomo's convention: count bytes as the arrays hold them (no rounding to 256 bytes) and no overhead factor, and show the arithmetic")
	quiet := fs.Bool("q", false, "no progress lines on stderr (planning several methods for over a second shows them)")
	paths := fs.Bool("paths", false, "also compare the transfer paths of the largest chunk's input (HtoD) and output (DtoH): for each way the host could hold the data (pageable: direct, staged, registered; pinned; mapped pinned; managed: on demand, prefetch, read-mostly) its modelled time and GB/s, and the planner's pick; one method")
	profile := fs.String("profile", "", "with -paths: the planner's profile file, as cuarray bench -calibrate saves it (default: $"+transfer.ProfileEnv+", else profile-MODEL.json in the user config dir; sim reads only $"+transfer.ProfileEnv+")")
	params := plan.Params{}
	fs.Func("param", "a method parameter name=integer (repeatable)", func(s string) error {
		name, v, err := parseParam(s)
		if err == nil {
			params[name] = v
		}
		return err
	})
	if err := parseSet(fs, args); err != nil {
		return err
	}
	if *axis < 0 || *axis > 2 {
		return usageError{fmt.Sprintf("axis %d: want 0, 1 or 2, an axis of the 3-D shape", *axis)}
	}
	if !(*overhead >= 1) || math.IsInf(*overhead, 0) {
		return usageError{fmt.Sprintf("overhead %v: want a finite factor of at least 1, as 1.1", *overhead)}
	}
	overheadSet := false
	fs.Visit(func(f *flag.Flag) { overheadSet = overheadSet || f.Name == "overhead" })
	if *raw && overheadSet {
		return usageError{"-raw plans with no overhead factor: leave out -overhead"}
	}
	if *method == "list" || *method == "" {
		if *method == "" {
			return usageError{"want -method NAME (or -method list)"}
		}
		for _, n := range plan.Default.Names() {
			m, err := plan.Default.Lookup(n)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%-18s parameters: %s\n", n, plan.DescribeParams(m)) // one a line
		}
		return nil
	}
	methods, err := parseMethods(*method, plan.Default)
	if err != nil {
		return usageError{err.Error()}
	}
	if *paths && len(methods) > 1 {
		return usageError{"-paths compares the transfers of one method's job: give one -method"}
	}
	if *profile != "" && !*paths {
		return usageError{"-profile is the profile -paths models the transfers with: give -paths too"}
	}
	if len(methods) == 1 {
		if err := plan.CheckParamNames(methods[0], params); err != nil {
			return usageError{"-param: " + strings.TrimSuffix(err.Error(), ": "+plan.ErrParam.Error())}
		}
	}
	shape, err := parseShape(*shapeArg)
	if err != nil {
		return usageError{err.Error()}
	}
	dtype, err := devarray.ParseDType(*dtypeArg)
	if err != nil {
		return usageError{err.Error()}
	}
	var limit int64
	if *memArg != "" {
		if limit, err = accounting.ParseBytes(*memArg); err != nil {
			return usageError{err.Error()}
		}
		if limit == 0 { // the ledger's "no limit": the plan would use the whole device
			return usageError{fmt.Sprintf("-mem %s: want a size of at least 1 byte (leave -mem out to plan for the device's free memory)", *memArg)}
		}
	}
	d, err := openDevice(*dev)
	if err != nil {
		return err
	}
	if d, err = deviceOfSize(d, *dev, limit, stderr); err != nil {
		return err
	}
	defer d.Close()
	led := d.Ledger()
	if err := errors.Join(led.SetLimit(accounting.Device, limit), led.SetOverhead(*overhead)); err != nil {
		return usageError{err.Error()}
	}
	planOne := func(m plan.Method) (plan.Plan, error) {
		if *raw {
			return plan.ForDeviceRaw(d, m, shape, *axis, dtype, params)
		}
		return plan.ForDevice(d, m, shape, *axis, dtype, params)
	}
	if len(methods) > 1 {
		var progress io.Writer
		if !*quiet && !*asJSON {
			progress = stderr
		}
		return planMany(methods, planOne, d.Info().Name, limit, *asJSON, stdout, progress)
	}
	p, err := planOne(methods[0])
	if badInput(err) {
		return usageError{err.Error()}
	}
	if err != nil {
		return err
	}
	var tables []routeTable
	if *paths {
		var notice error
		if tables, notice, err = routeTables(d, methods[0], p, params, *profile); err != nil {
			return err
		}
		if notice != nil {
			fmt.Fprintf(stderr, "cuarray plan: notice: %s\n", notice)
		}
	}
	if *asJSON {
		return writeJSON(stdout, planReport{Device: d.Info().Name, Plan: p, Limit: limit, Transfers: tables})
	}
	fmt.Fprintf(stdout, "%s on %s\n", p.Explain(), d.Info().Name)
	for i, c := range p.Chunks {
		if i == 8 && len(p.Chunks) > 10 {
			fmt.Fprintf(stdout, "  ... %d more chunks\n", len(p.Chunks)-i-1)
			c = p.Chunks[len(p.Chunks)-1]
			i = len(p.Chunks) - 1
			fmt.Fprintf(stdout, "  chunk %d: slices [%d, %d)\n", i, c.Start, c.Start+c.Len)
			break
		}
		fmt.Fprintf(stdout, "  chunk %d: slices [%d, %d)\n", i, c.Start, c.Start+c.Len)
	}
	return writeRouteTables(stdout, tables)
}

// badInput reports whether a planning error is about the values on the
// command line, for this method: a shape past int64 bytes, an axis,
// dtype or parameter the method does not take (exit status 2). Not
// fitting, and device failures, are not (status 1).
func badInput(err error) bool {
	for _, e := range []error{devarray.ErrShape, devarray.ErrDType, devarray.ErrOverflow, accounting.ErrInvalidArgument} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// parseShape parses "a,b,c" into a 3-D shape of non-negative sizes.
func parseShape(s string) ([3]int, error) {
	var shape [3]int
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return shape, fmt.Errorf("shape %q: want three sizes, as 2048,720,1024", s)
	}
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 {
			return shape, fmt.Errorf("shape %q: size %q is not a positive integer (a job has at least one slice of at least 1×1)", s, p)
		}
		shape[i] = v
	}
	return shape, nil
}

// parseParam parses "name=integer".
func parseParam(s string) (string, int, error) {
	name, val, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return "", 0, fmt.Errorf("param %q: want name=integer", s)
	}
	v, err := strconv.Atoi(val)
	if err != nil {
		return "", 0, fmt.Errorf("param %q: %q is not an integer", s, val)
	}
	return name, v, nil
}

// deviceOfSize checks a -mem limit against the device d opened from spec.
// A limit past its total memory plans for memory the device does not
// have: a sim whose size the spec left to its default is opened again at
// the limit's size, with a note on stderr; any other device is a usage
// error that says so. d is closed when it is not returned.
func deviceOfSize(d device.Device, spec string, limit int64, stderr io.Writer) (device.Device, error) {
	_, total, err := d.MemInfo()
	if err != nil || limit <= total {
		if err != nil {
			d.Close()
		}
		return d, err
	}
	name := d.Info().Name
	s, perr := device.ParseSpec(name)
	if spec != "" {
		s, perr = device.ParseSpec(spec)
	}
	if d.Info().Backend != "sim" || perr != nil || s.Options.Has("mem") {
		d.Close()
		return nil, usageError{fmt.Sprintf("-mem %s is more than %s's %s: a plan cannot use memory the device does not have (for sim, give the size: -device sim:0?mem=%s)",
			accounting.FormatBytes(limit), name, accounting.FormatBytes(total), compactBytes(limit))}
	}
	d.Close()
	if s.Options == nil {
		s.Options = url.Values{}
	}
	s.Options.Set("mem", compactBytes(limit))
	bigger, err := openDevice(s.String())
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "cuarray plan: -mem %s is more than %s's default %s: planning on %s\n",
		accounting.FormatBytes(limit), name, accounting.FormatBytes(total), s)
	return bigger, nil
}

// compactBytes writes n as a device spec takes it: 16GiB, or bytes.
func compactBytes(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"PiB", 50}, {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
