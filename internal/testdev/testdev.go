// Package testdev opens the device that cuarray's tests run on, so that one
// set of tests runs on the sim backend everywhere and on a real GPU when
// built with -tags cuda:
//
//	CUARRAY_TEST_DEVICE=spec   that device ("sim:0?mem=1GiB", "cuda:1",
//	                           "sim:0?mem=256MiB&latency=1ms": work completes
//	                           1 ms after it is queued, as on a GPU)
//	otherwise                  cuda:0 in a build with -tags cuda, else sim:0 with 256 MiB
//
// The device is closed when the test ends, after checking that the test
// freed every byte of device and page-locked memory it allocated.
package testdev

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
)

// EnvVar names the environment variable that picks the test device.
const EnvVar = "CUARRAY_TEST_DEVICE"

// Spec returns the spec of the device tests run on.
func Spec() string {
	if s := os.Getenv(EnvVar); s != "" {
		return s
	}
	if device.CUDABuilt {
		return "cuda:0"
	}
	return "sim:0?mem=256MiB"
}

// Open opens the test device, or fails the test when it cannot. Its
// cleanup checks that the test freed everything and closes it.
func Open(t testing.TB) device.Device {
	t.Helper()
	dev := OpenOwned(t)
	misuses := undefinedUses(dev)
	t.Cleanup(func() {
		if uses := undefinedUses(dev); len(uses) > len(misuses) {
			t.Errorf("undefined behaviour while the test ran (a GPU may crash on it): %s", strings.Join(uses[len(misuses):], "; "))
		}
		snap := dev.Ledger().Snapshot()
		if !t.Failed() {
			for _, k := range []accounting.Kind{accounting.Device, accounting.Pinned, accounting.Mapped, accounting.WriteCombined, accounting.Registered, accounting.IPC, accounting.StreamOrdered, accounting.VirtualAddress, accounting.Physical} {
				if s := snap.Kinds[k]; s.Current != 0 || s.Allocs != s.Frees {
					t.Errorf("%v memory leaked: current %d bytes, %d allocs, %d frees", k, s.Current, s.Allocs, s.Frees)
				}
			}
		}
		if err := dev.Close(); err != nil {
			t.Errorf("close test device: %v", err)
		}
	})
	return dev
}

// undefinedUses returns the undefined-behaviour driver calls the device's
// driver has seen so far: the emulated CUDA driver records each use of a
// destroyed stream or event handle; other devices record none.
func undefinedUses(dev device.Device) []string {
	if u, ok := dev.(interface{ UndefinedUses() []string }); ok {
		return u.UndefinedUses()
	}
	return nil
}

// HostOnly marks a test that touches no device, host code alone: it runs
// where the test device is the plain build's default (make test's first
// pass) and skips, saying so, where the test device was chosen otherwise
// (CUARRAY_TEST_DEVICE: the latency pass, a GPU run) or the build is the
// cuda one (the emulated driver's passes, cuda-test): there it would run
// the same host code again and test nothing new.
func HostOnly(t testing.TB) {
	t.Helper()
	if spec := os.Getenv(EnvVar); spec != "" {
		t.Skipf("host code alone, which make test runs on the default device: on %s it would run the same again", spec)
	}
	if device.CUDABuilt {
		t.Skip("host code alone, which make test runs in the default build: the cuda build would run the same again")
	}
}

// IsSim reports whether dev is the emulated device.
func IsSim(dev device.Device) bool { return dev.Info().Backend == "sim" }

// OpenPeer opens a second device of dev's backend for peer copies, closed
// when the test ends: a sim device of mem bytes with dev's latency, or the
// next GPU; the test skips where there is no second GPU.
func OpenPeer(t testing.TB, dev device.Device, mem string) device.Device {
	t.Helper()
	spec := "sim:5?mem=" + mem + "&latency=" + SimLatency(dev).String()
	if id := dev.DeviceID(); !IsSim(dev) {
		spec = fmt.Sprintf("%v:%d", id.Kind, id.Ordinal+1)
	}
	other, err := device.Open(spec)
	if err != nil {
		if !IsSim(dev) {
			t.Skipf("a peer copy needs a second GPU: %v", err)
		}
		t.Fatalf("open %s: %v", spec, err)
	}
	t.Cleanup(func() {
		if err := other.Close(); err != nil {
			t.Errorf("close %s: %v", spec, err)
		}
	})
	return other
}

// RandomBytes returns n fresh random bytes: tests never copy zeros.
func RandomBytes(n int) []byte {
	b := make([]byte, n)
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(rand.Uint32())
	}
	rand.NewChaCha8(seed).Read(b) // about 7 times the speed of a byte per call: tests fill many MiB
	return b
}

// Peeker is a device whose memory can be read as it is now, waiting for
// no stream (sim, and the cuda backend through a non-blocking stream).
type Peeker interface {
	Peek(p devarray.Ptr, n int64) ([]byte, error)
}

// PeekDeadline bounds how long Peek waits for the device's peek, which
// waits for nothing: past it the test fails, naming the call, instead of
// hanging until the test binary's timeout (a failed test lets its held
// streams go, see Hold, so the peek then returns).
const PeekDeadline = 20 * time.Second

// Peek reads n bytes of device memory at p as they are at this instant,
// behind no queued work: right after a synchronous call returns, they must
// already hold its result. It skips the test on a device that cannot peek,
// and fails it when the peek has not returned within PeekDeadline: a peek
// through pageable memory waits while a host function holds a stream, as
// cuarray_peek's copy into a Go slice did on the H100 of 2026-11-27
// (kernels' TestAsyncKernelsReturnBeforeTheWorkIsDone hung), and as the
// emulated CUDA driver's does.
func Peek(t testing.TB, dev device.Device, p devarray.Ptr, n int64) []byte {
	t.Helper()
	pk, ok := dev.(Peeker)
	if !ok {
		t.Skipf("%v cannot read its memory without waiting for its streams", dev.DeviceID())
	}
	type peeked struct {
		b   []byte
		err error
	}
	done := make(chan peeked, 1)
	go func() {
		b, err := pk.Peek(p, n)
		done <- peeked{b, err}
	}()
	select {
	case got := <-done:
		if got.err != nil {
			t.Fatalf("peek %d bytes at %v: %v", n, p, got.err)
		}
		return got.b
	case <-time.After(PeekDeadline):
		t.Fatalf("peek %d bytes at %v: no return in %v (a peek through pageable memory waits while a host function holds a stream)", n, p, PeekDeadline)
		return nil
	}
}

// SimLatency returns the latency option of a sim device, or of the emulated
// CUDA driver (its CUARRAY_EMULATED_DRIVER latency=), 0 for others: a test
// that opens a second sim device gives it the same, and one that needs work
// still running after its call returns knows whether it has that.
func SimLatency(dev device.Device) time.Duration {
	if l, ok := dev.(interface{ Latency() time.Duration }); ok {
		return l.Latency()
	}
	if dev.Info().Emulated() {
		// the emulated CUDA driver's stream operations: its latency= option
		q, err := url.ParseQuery(os.Getenv("CUARRAY_EMULATED_DRIVER"))
		if d, perr := time.ParseDuration(q.Get("latency")); err == nil && perr == nil {
			return d
		}
	}
	return 0
}

// RequireComplete checks that the n bytes of device memory at p hold now,
// the instant a synchronous call has returned, what they hold once the
// device has finished all its work: a call that returned before its work
// was done fails it (on sim with latency, and on a GPU). Tests give it
// destinations filled with random bytes first, so a late write shows.
func RequireComplete(t testing.TB, dev device.Device, p devarray.Ptr, n int64, call string) {
	t.Helper()
	now := Peek(t, dev, p, n)
	if err := dev.Synchronize(); err != nil {
		t.Fatalf("%s: synchronize: %v", call, err)
	}
	later := Peek(t, dev, p, n)
	if diff := countDiff(now, later); diff > 0 {
		t.Fatalf("%s returned before its work was done: %d of %d bytes changed after it returned", call, diff, n)
	}
}

// RequireHostComplete is RequireComplete for host memory a call wrote (a
// Go slice, a pinned or mapped buffer).
func RequireHostComplete(t testing.TB, dev device.Device, b []byte, call string) {
	t.Helper()
	now := append([]byte(nil), b...)
	if err := dev.Synchronize(); err != nil {
		t.Fatalf("%s: synchronize: %v", call, err)
	}
	if diff := countDiff(now, b); diff > 0 {
		t.Fatalf("%s returned before its work was done: %d of %d bytes changed after it returned", call, diff, len(b))
	}
}

// RequireArrayComplete is RequireComplete for the memory array a spans.
func RequireArrayComplete(t testing.TB, a *devarray.DevArray, call string) {
	t.Helper()
	dev, ok := a.Backend().(device.Device)
	if !ok {
		t.Fatalf("%s: array of %T, not of a device", call, a.Backend())
	}
	lo, hi := a.Extent()
	RequireComplete(t, dev, a.Ptr()+devarray.Ptr(lo), hi-lo, call)
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// OpenOwned opens a device of the test device's kind for a test that
// closes it itself (one that closes a device under its arrays, buffers or
// pools): it skips where Open skips, a cuda build's test without a GPU,
// and fails the test when the device cannot be opened. Nothing closes it
// for the test.
func OpenOwned(t testing.TB) device.Device {
	t.Helper()
	dev, err := device.Open(Spec())
	if err != nil && os.Getenv(EnvVar) == "" && errors.Is(err, device.ErrNoDevice) {
		// A cuda build's tests default to cuda:0; without a GPU they have none to run on.
		t.Skipf("the cuda build's tests run on cuda:0 and no GPU answered (%v); set %s=sim:0 to run them on sim", err, EnvVar)
	}
	if err != nil {
		t.Fatalf("open test device %q: %v", Spec(), err)
	}
	return dev
}

// NoDevice matches the message of a device that cannot be opened because
// it is not there: "no such device" (driver.ErrNoDevice), or, in a cuda
// build on a machine without a GPU, why no GPU answered (every cuda device
// is missing then, and its InitError says why). Tests of command lines
// that name a device that does not exist check stderr against it.
var NoDevice = regexp.MustCompile(`no such device|no CUDA GPU answered|no CUDA driver`)

// PageLocked returns n bytes of page-locked host memory on dev, freed when
// the test ends, so dev must stay open until then (a device from Open does:
// its cleanup runs after this one): for a stream's async
// copy that must be queued, not waited for. A copy into pageable memory
// returns only once complete, Async too, so with a held stream ahead of it
// the call would never return (on a GPU, and on sim and the emulated
// driver, which follow it).
func PageLocked(t testing.TB, dev device.Device, n int64) []byte {
	t.Helper()
	h, err := dev.HostAlloc(n, 0)
	if err != nil {
		t.Fatalf("page-locked host memory of %d bytes: %v", n, err)
	}
	t.Cleanup(func() {
		if err := dev.HostFree(h); err != nil {
			t.Errorf("free page-locked host memory: %v", err)
		}
	})
	return h.Bytes
}
