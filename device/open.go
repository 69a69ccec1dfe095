package device

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
)

// Spec is a parsed device spec: "kind:ordinal?option=value&...".
type Spec struct {
	Kind    string     // "sim" or "cuda"
	Ordinal int        // the device's number
	Options url.Values // backend options
}

// String writes the spec back in its text form.
func (s Spec) String() string {
	t := s.Kind + ":" + strconv.Itoa(s.Ordinal)
	if len(s.Options) > 0 {
		t += "?" + s.Options.Encode()
	}
	return t
}

// ParseSpec parses a device spec such as "sim:0", "cuda:1" or
// "sim:0?mem=256MiB&fail-alloc=3". The ordinal may be left out ("sim" is
// "sim:0"). The empty spec is the default device; see Open.
func ParseSpec(spec string) (Spec, error) {
	head, query, _ := strings.Cut(spec, "?")
	kind, ord, hasOrd := strings.Cut(head, ":")
	s := Spec{Kind: kind}
	if kind != "sim" && kind != "cuda" {
		return Spec{}, fmt.Errorf("device: spec %q: kind %q is not sim or cuda: %w", spec, kind, ErrBadSpec)
	}
	if hasOrd {
		n, err := strconv.Atoi(ord)
		if err != nil || n < 0 || ord != strconv.Itoa(n) {
			return Spec{}, fmt.Errorf("device: spec %q: ordinal %q is not a non-negative number: %w", spec, ord, ErrBadSpec)
		}
		s.Ordinal = n
	}
	opts, err := url.ParseQuery(query)
	if err != nil {
		return Spec{}, fmt.Errorf("device: spec %q: options: %v: %w", spec, err, ErrBadSpec)
	}
	if len(opts) > 0 {
		s.Options = opts
	}
	return s, nil
}

// Open opens the device named by spec:
//
//	""       cuda:0 when built with -tags cuda and a GPU answers, else sim:0;
//	         a cuda build that falls back says why once per process on
//	         stderr ("cuarray: cuda:0: no CUDA GPU answered (...); using
//	         sim:0") unless NoticeEnv is "off"; OpenDefault returns the
//	         reason instead and writes nothing
//	"sim:N"  an emulated device; options mem=SIZE (default 4GiB), maphost=false,
//	         fail-alloc=N and fail-copy=N (fail the Nth allocation or copy),
//	         fail-fault=N (the Nth copy, memset or kernel faults as an
//	         illegal address does on a GPU: every later call fails with
//	         ErrContextFailed until Close),
//	         latency=DURATION (each stream operation completes that long
//	         after it is queued, as on a GPU: "sim:0?latency=2ms"),
//	         link=GBPS or link=PINNED,PAGEABLE (a modelled host link, see
//	         sim.Link: copies between host and device move at that many
//	         GB/s, pinned memory's and pageable memory's (managed
//	         memory's migrations at the pinned rate), at least
//	         sim.MinLinkGBps (1 MB/s): "sim:0?link=25,12"; page faults
//	         on managed memory take their service time on it, guesses:
//	         sim.DefaultDeviceFaultService a kernel's batch of
//	         sim.FaultBatch faults, sim.DefaultHostFaultService a host
//	         fault), fault-service=DEVICE,HOST (those two durations, 0 to
//	         1s, with link=: "fault-service=0,0" makes faults cost only
//	         their bytes),
//	         check=streams (the stream race checker: an operation that
//	         races with another by CUDA's ordering rules fails with an
//	         error wrapping ErrStreamRace, naming both; see sim.Config)
//	"cuda:N" GPU N; needs -tags cuda
//
// A spec that cannot be parsed, or an option that is unknown or malformed,
// is an error wrapping ErrBadSpec; a device that does not answer, one wrapping ErrNoDevice.
// A GPU that failed with a sticky error (an illegal address in a kernel:
// ErrContextFailed) is of no more use to the process: "To continue using
// CUDA, the process must be terminated and relaunched" (cuda.h). Closing
// it and opening it again returns an error wrapping ErrContextFailed that
// says to restart the process; a program that must survive such a fault
// runs its GPU work in a child process.
func Open(spec string) (Device, error) {
	if spec == "" {
		dev, fallback, err := OpenDefault()
		if err == nil {
			noteFallback(dev, fallback)
		}
		return dev, err
	}
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	if s.Kind == "cuda" {
		if len(s.Options) > 0 {
			return nil, fmt.Errorf("device: %v: the cuda backend takes no options: %w", s, ErrBadSpec)
		}
		return openCUDA(s)
	}
	cfg, err := simConfig(s)
	if err != nil {
		return nil, err
	}
	return sim.New(cfg)
}

// simConfig turns a sim spec's options into a sim.Config.
func simConfig(s Spec) (sim.Config, error) {
	cfg := sim.Config{Ordinal: s.Ordinal}
	var faults []time.Duration // fault-service=, nil when not given
	for key, vals := range s.Options {
		if len(vals) != 1 {
			return cfg, fmt.Errorf("device: %v: option %q given %d times: %w", s, key, len(vals), ErrBadSpec)
		}
		v := vals[0]
		var err error
		switch key {
		case "mem":
			cfg.Memory, err = accounting.ParseBytes(v)
			if err == nil && cfg.Memory < sim.Alignment {
				err = fmt.Errorf("at least %d bytes", sim.Alignment)
			}
		case "maphost":
			var on bool
			on, err = strconv.ParseBool(v)
			cfg.NoMapHost = !on
		case "fail-alloc":
			cfg.FailAlloc, err = parseCount(v)
		case "fail-copy":
			cfg.FailCopy, err = parseCount(v)
		case "fail-fault":
			cfg.FailFault, err = parseCount(v)
		case "latency":
			cfg.Latency, err = time.ParseDuration(v)
			if err == nil && (cfg.Latency < 0 || cfg.Latency > time.Minute) {
				err = fmt.Errorf("want a duration from 0 to 1m")
			}
		case "link":
			cfg.Link, err = parseLink(v)
		case "fault-service":
			faults, err = parseFaultService(v)
		case "check":
			if v != "streams" {
				err = fmt.Errorf("want streams (the stream race checker)")
			}
			cfg.CheckStreams = err == nil
		case "kernels":
			if v != "ptx" && v != "go" {
				err = fmt.Errorf("want ptx (the project's kernels run from their PTX, interpreted) or go (their Go references, the default)")
			}
			cfg.PTXKernels = v == "ptx"
		case "managed":
			if v != "concurrent" && v != "exclusive" {
				err = fmt.Errorf("want concurrent (the host and device may touch managed memory at once, the default) or exclusive (CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS 0)")
			}
			cfg.NoConcurrentManagedAccess = v == "exclusive"
		case "pageable-access":
			cfg.PageableAccess, err = driver.ParsePageableAccess(v)
		default:
			return cfg, fmt.Errorf("device: %v: unknown option %q (want mem, maphost, fail-alloc, fail-copy, fail-fault, latency, link, fault-service, check, kernels, managed or pageable-access): %w", s, key, ErrBadSpec)
		}
		if err != nil {
			return cfg, fmt.Errorf("device: %v: option %s=%q: %s: %w", s, key, v, withoutSentinel(err), ErrBadSpec)
		}
	}
	switch {
	case faults != nil && cfg.Link == nil:
		return cfg, fmt.Errorf("device: %v: option fault-service: faults take their service time on the modelled link: give link= too: %w", s, ErrBadSpec)
	case faults != nil:
		cfg.Link.DeviceFaultService, cfg.Link.HostFaultService = faults[0], faults[1]
	case cfg.Link != nil:
		cfg.Link.DeviceFaultService, cfg.Link.HostFaultService = sim.DefaultDeviceFaultService, sim.DefaultHostFaultService
	}
	return cfg, nil
}

// parseFaultService parses a sim link's fault service times: "DEVICE,HOST"
// (a kernel's batch of faults, a host fault), durations from 0 to
// sim.MaxFaultService.
func parseFaultService(v string) ([]time.Duration, error) {
	parts := strings.Split(v, ",")
	bad := fmt.Errorf("want two durations from 0 to %v, a kernel's batch of %d faults and a host fault: 128us,2us", sim.MaxFaultService, sim.FaultBatch)
	if len(parts) != 2 {
		return nil, bad
	}
	out := make([]time.Duration, 2)
	for i, p := range parts {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 || d > sim.MaxFaultService {
			return nil, bad
		}
		out[i] = d
	}
	return out, nil
}

// withoutSentinel is err's message without the text of the innermost
// error it wraps when the message ends with it ("...: accounting: invalid
// argument"): the spec's error puts its own sentinel there, and one line
// with two sentinels reads as a stutter.
func withoutSentinel(err error) string {
	msg := err.Error()
	var inner error
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		inner = e
	}
	if inner != nil && inner.Error() != msg {
		msg = strings.TrimSuffix(msg, ": "+inner.Error())
	}
	return msg
}

// parseLink parses a sim link's rates: "25" (pinned and pageable memory
// alike) or "25,12" (pinned, pageable), finite GB/s of at least
// sim.MinLinkGBps.
func parseLink(v string) (*sim.Link, error) {
	parts := strings.Split(v, ",")
	if len(parts) > 2 {
		return nil, fmt.Errorf("want GB/s, or pinned,pageable GB/s")
	}
	rates := make([]float64, len(parts))
	for i, p := range parts {
		r, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(r >= sim.MinLinkGBps) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("want GB/s from %v, or pinned,pageable GB/s", sim.MinLinkGBps)
		}
		rates[i] = r
	}
	return &sim.Link{PinnedGBps: rates[0], PageableGBps: rates[len(rates)-1]}, nil
}

func parseCount(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a non-negative count")
	}
	return n, nil
}

var _ driver.Device = (*sim.Device)(nil)
