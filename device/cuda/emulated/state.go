//go:build cuda && cudaemu && linux

package emulated

/*
#cgo linux CFLAGS: -I/usr/include -I/usr/local/cuda/include
#include <cuda.h>
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// EnvVar names the environment variable that configures the emulated driver.
const EnvVar = "CUARRAY_EMULATED_DRIVER"

// Version is the driver API version the emulated driver reports
// (cuDriverGetVersion) unless configured otherwise: CUDA 12.8's.
const Version = 12080

// config is the emulated driver's configuration (EnvVar).
type config struct {
	devices   int
	memory    int64
	latency   time.Duration
	failFault int64
	check     bool            // the stream race checker of each context's sim device (check=streams)
	version   int             // what cuDriverGetVersion reports
	mapHost   bool            // cuCtxGetFlags reports CU_CTX_MAP_HOST whether or not it was set
	lack      map[string]bool // driver symbols this driver does not have
	refuse    map[string]bool // driver symbols that answer CUDA_ERROR_INVALID_VALUE and do nothing

	abortOnMisuse bool // misuse=abort: a destroyed handle's use aborts the process (misuse.go)

	// pageableWaits: pageable copies wait as the driver's API
	// synchronization page says (pageable.go); pageable=early turns it off,
	// to compare with the old reading.
	pageableWaits       bool
	pageableWaitsHostFn bool // a pageable copy waits while a host function runs (hostfn.go)

	// goKernels (kernels=go) runs the project's kernels as their Go
	// references from package kernels, for speed; by default every kernel
	// runs from its PTX through the interpreter (device/ptx).
	goKernels bool

	// exclusiveManaged (managed=exclusive) makes every device one without
	// concurrent managed access (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS
	// 0, managed.go), as GPUs before Pascal and every GPU on Windows.
	exclusiveManaged bool

	// pageableAccess (pageable-access=none|hmm|ats) is how every device
	// reaches pageable host memory (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS
	// and ..._USES_HOST_PAGE_TABLES, pageable_access.go): none by default,
	// as on most GPUs.
	pageableAccess driver.PageableAccess
}

// parseConfig parses EnvVar's value.
func parseConfig(s string) (config, error) {
	c := config{devices: 1, memory: 80 << 30, version: Version, mapHost: true, pageableWaits: true, pageableWaitsHostFn: true} // an H100's memory; reserved, not committed, as sim's memory is
	q, err := url.ParseQuery(s)
	if err != nil {
		return c, fmt.Errorf("%s=%q: %v", EnvVar, s, err)
	}
	for k, v := range q {
		val := v[len(v)-1]
		var err error
		switch k {
		case "devices":
			c.devices, err = strconv.Atoi(val)
			if err == nil && (c.devices < 1 || c.devices > 64) {
				err = fmt.Errorf("want 1 to 64")
			}
		case "mem":
			c.memory, err = accounting.ParseBytes(val)
			if err == nil && c.memory < 1<<20 {
				err = fmt.Errorf("want at least 1MiB")
			}
		case "latency":
			c.latency, err = time.ParseDuration(val)
			if err == nil && c.latency < 0 {
				err = fmt.Errorf("want a non-negative duration")
			}
		case "check":
			c.check = val == "streams"
			if !c.check {
				err = fmt.Errorf("want streams (the stream race checker)")
			}
		case "fail-fault":
			c.failFault, err = strconv.ParseInt(val, 10, 64)
		case "version":
			c.version, err = strconv.Atoi(val)
			if err == nil && (c.version < 1000 || c.version > 99990) {
				err = fmt.Errorf("want a driver API version such as 12080")
			}
		case "misuse":
			c.abortOnMisuse = val == "abort"
			if val != "abort" && val != "record" {
				err = fmt.Errorf("want record (the default) or abort")
			}
		case "pageable":
			c.pageableWaits = val == "wait"
			if val != "wait" && val != "early" {
				err = fmt.Errorf("want wait (the default) or early")
			}
		case "pageable-waits-hostfn":
			c.pageableWaitsHostFn, err = strconv.ParseBool(val)
		case "map-host":
			c.mapHost, err = strconv.ParseBool(val)
		case "kernels":
			c.goKernels = val == "go"
			if val != "go" && val != "ptx" {
				err = fmt.Errorf("want ptx (the default: kernels run from their PTX, interpreted) or go (the project's kernels run as their Go references)")
			}
		case "managed":
			c.exclusiveManaged = val == "exclusive"
			if val != "exclusive" && val != "concurrent" {
				err = fmt.Errorf("want concurrent (the default, as an H100 on Linux) or exclusive (no concurrent managed access)")
			}
		case "pageable-access":
			c.pageableAccess, err = driver.ParsePageableAccess(val)
		case "lack", "refuse":
			set := make(map[string]bool)
			for _, sym := range strings.Split(val, ",") {
				if !strings.HasPrefix(sym, "cu") {
					err = fmt.Errorf("want driver symbols, such as cuMemcpy3DAsync_v2, separated by commas")
					break
				}
				set[sym] = true
			}
			if k == "lack" {
				c.lack = set
			} else {
				c.refuse = set
			}
		default:
			err = fmt.Errorf("unknown option (devices, mem, latency, check, fail-fault, version, map-host, misuse, pageable, pageable-waits-hostfn, kernels, managed, pageable-access, lack, refuse)")
		}
		if err != nil {
			return c, fmt.Errorf("%s: %s=%q: %v", EnvVar, k, val, err)
		}
	}
	return c, nil
}

// state is the emulated driver: what one libcuda holds for a process.
type state struct {
	mu          sync.Mutex
	initialized bool
	initErr     error
	cfg         config
	devices     []*device
	handles     map[uintptr]any  // contexts, streams, events, modules, functions by handle
	current     map[int]*context // the current context of each OS thread
	host        []*hostRange     // page-locked host memory of every context
	failures    []Failure
	races       []string // the stream race checker's reports (check=streams)

	// dead holds the destroyed stream and event handles not yet reused,
	// with what each was ("stream", "event"); reusable holds them by kind,
	// the last destroyed first, as the driver's allocator hands out the
	// address it freed last (see retire).
	dead     map[uintptr]string
	reusable map[string][]uintptr
	misuses  []string // undefined-behaviour uses of destroyed handles (see misuse)

	kernelFaults []string               // interpreted kernels' fault reports (interpret.go)
	launches     map[string]KernelStats // interpreted launches by kernel name
}

var drv = &state{handles: make(map[uintptr]any), current: make(map[int]*context), dead: make(map[uintptr]string), reusable: make(map[string][]uintptr)}

// Failure is a driver call that returned an error, as compute-sanitizer's
// API error report lists them.
type Failure struct {
	Call   string // the driver function, "cuDevicePrimaryCtxSetFlags_v2"
	Result int    // the CUresult it returned
	Name   string // its name, "CUDA_ERROR_INVALID_VALUE"
}

func (f Failure) String() string { return fmt.Sprintf("%s: %s (%d)", f.Call, f.Name, f.Result) }

// maxFailures is how many failed calls the driver remembers.
const maxFailures = 4096

// Failures returns the driver calls that failed since the last
// ResetFailures, oldest first (at most the first 4096).
func Failures() []Failure {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	return append([]Failure(nil), drv.failures...)
}

// Races returns the reports of the stream races that the checker of the
// driver's sim devices found (check=streams), oldest first: each failed
// its call with CUDA_ERROR_UNKNOWN and was printed to standard error.
func Races() []string {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	return append([]string(nil), drv.races...)
}

// noteRace remembers and prints a stream race report.
func noteRace(err error) {
	drv.mu.Lock()
	if len(drv.races) < maxFailures {
		drv.races = append(drv.races, err.Error())
	}
	drv.mu.Unlock()
	fmt.Fprintf(os.Stderr, "cuarray emulated driver: %v\n", err)
}

// ResetFailures forgets the failed calls so far.
func ResetFailures() {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	drv.failures = nil
}

// result records a failed call and returns its result. A use of a
// destroyed handle is recorded as undefined behaviour too (misuse).
func result(call string, r cuResult) C.CUresult {
	countCall(call)
	r = misused(call, r)
	settleDetail(r)
	if r != success {
		drv.mu.Lock()
		if len(drv.failures) < maxFailures {
			drv.failures = append(drv.failures, Failure{Call: call, Result: int(r), Name: r.name()})
		}
		drv.mu.Unlock()
	}
	return C.CUresult(r)
}

// The configuration, read from EnvVar once: when gorgonia.org/cu's Init
// resolves the driver's symbols (lack and refuse apply there), before cuInit.
var (
	configOnce sync.Once
	configured config
	configErr  error
)

func loadConfig() (config, error) {
	configOnce.Do(func() { configured, configErr = parseConfig(os.Getenv(EnvVar)) })
	return configured, configErr
}

// start is cuInit: it reads the configuration and makes the devices.
func (s *state) start() cuResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		s.initialized = true
		s.cfg, s.initErr = loadConfig()
		if s.initErr == nil {
			for i := range s.cfg.devices {
				d := &device{ordinal: i}
				d.primary = &context{dev: d}
				d.primary.handle = s.newHandleLocked(d.primary)
				s.devices = append(s.devices, d)
			}
		} else {
			fmt.Fprintf(os.Stderr, "cuarray emulated driver: %v\n", s.initErr)
		}
	}
	if s.initErr != nil {
		return errInvalidValue
	}
	return success
}

// ready reports whether cuInit has succeeded.
func (s *state) ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized && s.initErr == nil
}

// newHandleLocked returns a handle for o: the address of a byte of C
// memory. A stream or an event takes the handle of the stream or event
// destroyed last, when there is one (retire): a CUstream and a CUevent are
// addresses of the driver's own structures, which it reuses, so a wrapper
// that outlives its stream can meet a new one at the same address. The
// caller holds s.mu.
func (s *state) newHandleLocked(o any) uintptr {
	kind := handleKind(o)
	if free := s.reusable[kind]; kind != "" && len(free) > 0 {
		h := free[len(free)-1]
		s.reusable[kind] = free[:len(free)-1]
		delete(s.dead, h)
		s.handles[h] = o
		return h
	}
	h := uintptr(C.malloc(1))
	s.handles[h] = o
	return h
}

// handleKind names the kinds of handle the driver reuses: "stream" and
// "event"; "" for the others, whose handles are never reused.
func handleKind(o any) string {
	switch o.(type) {
	case *stream:
		return "stream"
	case *event:
		return "event"
	}
	return ""
}

func (s *state) newHandle(o any) uintptr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newHandleLocked(o)
}

// forget invalidates handle h. A stream's or an event's handle is
// retired: remembered as destroyed until a new stream or event takes it.
func (s *state) forget(h uintptr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.handles[h]
	if !ok {
		return
	}
	delete(s.handles, h)
	if kind := handleKind(o); kind != "" {
		s.dead[h] = kind
		s.reusable[kind] = append(s.reusable[kind], h)
	}
}

// destroyed reports what handle h was, when it is a destroyed stream or
// event not yet reused.
func (s *state) destroyed(h uintptr) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind, ok := s.dead[h]
	return kind, ok
}

// lookup returns the object of handle h, if it is a T.
func lookup[T any](h uintptr) (T, bool) {
	drv.mu.Lock()
	defer drv.mu.Unlock()
	o, ok := drv.handles[h].(T)
	return o, ok
}

// device returns device ordinal, or nil.
func (s *state) device(ordinal int) *device {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ordinal < 0 || ordinal >= len(s.devices) {
		return nil
	}
	return s.devices[ordinal]
}

// currentContext returns the calling OS thread's current context, or nil.
// An exported driver function runs on the thread of its C caller.
func (s *state) currentContext() *context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current[syscall.Gettid()]
}

func (s *state) setCurrent(c *context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == nil {
		delete(s.current, syscall.Gettid())
		return
	}
	s.current[syscall.Gettid()] = c
}
