package device_test

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/sim"
)

func TestOpen(t *testing.T) {
	tests := []struct {
		spec  string
		name  string
		total int64
		mapOK bool
	}{
		{"sim", "sim:0", 4 << 30, true},
		{"sim:3", "sim:3", 4 << 30, true},
		{"sim:0?mem=256MiB", "sim:0", 256 << 20, true},
		{"sim:1?mem=1GB&maphost=false", "sim:1", 1e9 / 256 * 256, false},
		{"sim:0?fail-alloc=0&fail-copy=0", "sim:0", 4 << 30, true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			dev, err := device.Open(tt.spec)
			require.NoError(t, err)
			defer dev.Close()
			info := dev.Info()
			assert.Equal(t, tt.name, info.Name)
			assert.Equal(t, tt.total, info.TotalMemory)
			assert.Equal(t, tt.mapOK, info.CanMapHost)
			assert.Equal(t, tt.name, dev.Ledger().Name())
		})
	}
}

// link= models the host link: Info reports its fastest rate, which the
// bench takes as the ceiling of the host-device figures.
func TestOpenLink(t *testing.T) {
	for _, tc := range []struct {
		spec string
		bps  float64 // Info.HostLinkBandwidth
	}{
		{"sim:0?mem=1MiB", 0},
		{"sim:0?mem=1MiB&link=25", 25e9},
		{"sim:0?mem=1MiB&link=0.001", 1e6},
		{"sim:0?mem=1MiB&link=25,12", 25e9},
		{"sim:0?mem=1MiB&link=6,12", 12e9},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			dev, err := device.Open(tc.spec)
			require.NoError(t, err)
			defer dev.Close()
			assert.InDelta(t, tc.bps, dev.Info().HostLinkBandwidth, 1)
		})
	}
}

// fault-service= sets the service time of page faults on managed memory
// that the modelled link takes; a link named alone takes the guesses
// sim.DefaultDeviceFaultService and sim.DefaultHostFaultService.
func TestOpenFaultService(t *testing.T) {
	for _, tc := range []struct {
		spec string
		says string // in the device's String
	}{
		{"sim:0?mem=1MiB&link=25", "faults 128µs/256, 2µs/host fault"},
		{"sim:0?mem=1MiB&link=25&fault-service=1ms,5us", "faults 1ms/256, 5µs/host fault"},
		{"sim:0?mem=1MiB&fault-service=20us,0&link=25", "faults 20µs/256, 0s/host fault"},
		{"sim:0?mem=1MiB&link=25&fault-service=0,0", "link 25/25 GB/s)"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			dev, err := device.Open(tc.spec)
			require.NoError(t, err)
			defer dev.Close()
			assert.Contains(t, fmt.Sprint(dev), tc.says)
		})
	}
}

// FuzzOpenFaultService: a fault-service option either opens a device or
// is refused with ErrBadSpec; it never panics.
func FuzzOpenFaultService(f *testing.F) {
	for _, s := range []string{"128us,2us", "0,0", "1s,1s", "2s,0", "-1us,0", "1us", "1us,2us,3us", ",", "NaN,1", " 5ms , 0 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		dev, err := device.Open("sim:0?mem=1MiB&link=25&fault-service=" + url.QueryEscape(v))
		if err != nil {
			if !errors.Is(err, device.ErrBadSpec) {
				t.Fatalf("fault-service=%q: %v does not wrap ErrBadSpec", v, err)
			}
			return
		}
		dev.Close()
	})
}

// FuzzOpenLink: a link option either opens a device whose link is
// finite and at least sim.MinLinkGBps, or is refused with ErrBadSpec.
func FuzzOpenLink(f *testing.F) {
	for _, s := range []string{"25", "25,12", "0.001", "0", "-1", "1e400", "NaN", "1,2,3", ",", " 7 , 3 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		dev, err := device.Open("sim:0?mem=1MiB&link=" + url.QueryEscape(v))
		if err != nil {
			if !errors.Is(err, device.ErrBadSpec) {
				t.Fatalf("link=%q: %v does not wrap ErrBadSpec", v, err)
			}
			return
		}
		defer dev.Close()
		if bw := dev.Info().HostLinkBandwidth; !(bw >= sim.MinLinkGBps*1e9) || math.IsInf(bw, 0) {
			t.Fatalf("link=%q opened with a host link of %v B/s", v, bw)
		}
	})
}

func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		spec string
		want error
	}{
		{"gpu:0", device.ErrBadSpec},
		{"sim:-1", device.ErrBadSpec},
		{"sim:x", device.ErrBadSpec},
		{"sim:01", device.ErrBadSpec},
		{"sim:0?mem=lots", device.ErrBadSpec},
		{"sim:0?mem=10", device.ErrBadSpec},
		{"sim:0?mem=1MiB&mem=2MiB", device.ErrBadSpec},
		{"sim:0?maphost=perhaps", device.ErrBadSpec},
		{"sim:0?fail-alloc=-2", device.ErrBadSpec},
		{"sim:0?latency=-1ms", device.ErrBadSpec},
		{"sim:0?latency=soon", device.ErrBadSpec},
		{"sim:0?latency=2h", device.ErrBadSpec},
		{"sim:0?link=0", device.ErrBadSpec},
		{"sim:0?link=-25", device.ErrBadSpec},
		{"sim:0?link=fast", device.ErrBadSpec},
		{"sim:0?link=NaN", device.ErrBadSpec},
		{"sim:0?link=Inf", device.ErrBadSpec},
		{"sim:0?link=25,12,6", device.ErrBadSpec},
		{"sim:0?link=25,", device.ErrBadSpec},
		// rates below sim.MinLinkGBps: a copy would sleep for days, or its time overflow a Duration
		{"sim:0?link=1e-9", device.ErrBadSpec},
		{"sim:0?link=1e-300", device.ErrBadSpec},
		{"sim:0?link=25,0.0000001", device.ErrBadSpec},
		{"sim:0?fault-service=1ms,1us", device.ErrBadSpec}, // no link to take the time on
		{"sim:0?link=25&fault-service=1ms", device.ErrBadSpec},
		{"sim:0?link=25&fault-service=1ms,1us,1ns", device.ErrBadSpec},
		{"sim:0?link=25&fault-service=-1ms,1us", device.ErrBadSpec},
		{"sim:0?link=25&fault-service=1ms,2s", device.ErrBadSpec},
		{"sim:0?link=25&fault-service=slow,1us", device.ErrBadSpec},
		{"sim:0?link=25&fault-service=1ms,1us&fault-service=0,0", device.ErrBadSpec},
		{"sim:0?colour=blue", device.ErrBadSpec},
		{"sim:0?%zz", device.ErrBadSpec},
		{"cuda:99", device.ErrNoDevice},
		{"cuda:0?mem=1GiB", device.ErrBadSpec},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			dev, err := device.Open(tt.spec)
			assert.Nil(t, dev)
			assert.ErrorIs(t, err, tt.want)
			if err != nil {
				// at most once: a driver that does not start says why in its own words
				assert.LessOrEqual(t, strings.Count(err.Error(), tt.want.Error()), 1, "%q repeats its sentinel", err)
				assert.NotContains(t, err.Error(), accounting.ErrInvalidArgument.Error(), "one sentinel a line: the spec's")
			}
		})
	}
}

func TestOpenFaultInjection(t *testing.T) {
	dev, err := device.Open("sim:0?mem=1MiB&fail-alloc=2&fail-copy=1")
	require.NoError(t, err)
	defer dev.Close()
	a, err := devarray.Empty(dev, devarray.Float32, 4)
	require.NoError(t, err)
	defer a.Free()
	_, err = devarray.Empty(dev, devarray.Float32, 4)
	assert.ErrorIs(t, err, device.ErrInjected, "the second allocation fails")
	assert.ErrorIs(t, a.CopyFrom(make([]byte, 16)), device.ErrInjected, "the first copy fails")
	assert.ErrorIs(t, err, device.ErrOutOfMemory)
	assert.Equal(t, int64(1), dev.Ledger().Snapshot().Kinds[accounting.Device].Failed)

	faulty, err := device.Open("sim:1?mem=1MiB&fail-fault=1")
	require.NoError(t, err)
	defer faulty.Close()
	b, err := devarray.Empty(faulty, devarray.Float32, 4)
	require.NoError(t, err)
	err = b.CopyFrom(make([]byte, 16))
	assert.ErrorIs(t, err, device.ErrContextFailed, "the first copy faults: %v", err)
	assert.ErrorIs(t, b.Free(), device.ErrContextFailed, "and every later call fails")
}

func TestParseSpecRoundTrip(t *testing.T) {
	s, err := device.ParseSpec("sim:2?mem=1GiB&maphost=false")
	require.NoError(t, err)
	assert.Equal(t, device.Spec{Kind: "sim", Ordinal: 2, Options: url.Values{"mem": {"1GiB"}, "maphost": {"false"}}}, s)
	assert.Equal(t, "sim:2?maphost=false&mem=1GiB", s.String())
	back, err := device.ParseSpec(s.String())
	require.NoError(t, err)
	assert.Equal(t, s, back)
	assert.Equal(t, "cuda:0", device.Spec{Kind: "cuda"}.String())
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"sim:0", "cuda:1", "sim:0?mem=256MiB&fail-alloc=3", "sim", "sim:?", "sim:0?a=%zz", "x:y:z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := device.ParseSpec(spec)
		if err != nil {
			return
		}
		if s.Kind != "sim" && s.Kind != "cuda" || s.Ordinal < 0 {
			t.Fatalf("ParseSpec(%q) accepted %+v", spec, s)
		}
		back, err := device.ParseSpec(s.String())
		if err != nil {
			t.Fatalf("ParseSpec(%q).String() = %q does not parse: %v", spec, s.String(), err)
		}
		if back.String() != s.String() {
			t.Fatalf("round trip of %q: %q then %q", spec, s.String(), back.String())
		}
	})
}

// Example shows the smallest complete use: open the default device, move
// data up, make a view, bring it back, and read the ledger.
func Example() {
	dev, err := device.Open("sim:0?mem=64MiB")
	if err != nil {
		panic(err)
	}
	defer dev.Close()

	a, err := devarray.FromHost(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if err != nil {
		panic(err)
	}
	defer a.Free()
	col, err := a.Index(1, 2) // the last column: a view, nothing copied
	if err != nil {
		panic(err)
	}
	got, err := devarray.ToHost[float32](col)
	if err != nil {
		panic(err)
	}
	s := dev.Ledger().Snapshot()
	fmt.Println(got)
	fmt.Println("allocations:", s.Kinds[accounting.Device].Allocs)
	fmt.Println("bytes up:", s.CopyTotal(accounting.HtoD).Bytes, "bytes down:", s.CopyTotal(accounting.DtoH).Bytes)
	// Output:
	// [3 6]
	// allocations: 1
	// bytes up: 24 bytes down: 8
}
