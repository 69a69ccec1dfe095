package transfer_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/pinned"
	"github.com/cuarray/cuarray/transfer"
)

// The sticky-fault sweeps: a workflow of copies runs on a fresh sim device
// whose Nth copy, memset or kernel faults as an illegal address does on a
// GPU (sim.Device.FailFault), for N = 1, 2, ... until it runs with no
// fault, with sim latency 0 and 1 ms. For every N: no call panics or
// hangs, a call that returns nil did its work (the bytes are compared with
// fresh random data), a call that fails says ErrContextFailed, and closing
// the copier and everything else returns, after which the device's Close
// leaves no byte of any kind in the ledger and no goroutine behind.

const (
	faultDeadline = 10 * time.Second // the longest any call may take
	faultMaxN     = 400              // a workflow with more device operations is a runaway
)

var faultLatencies = []time.Duration{0, time.Millisecond}

// goroutineDump returns the stacks of every goroutine.
func goroutineDump() string {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	return buf.String()
}

// within runs f on a goroutine and returns its error; a call still running
// after faultDeadline fails the test with a dump of every goroutine.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(faultDeadline):
		t.Fatalf("%s did not return within %v (a hang); goroutines:\n%s", what, faultDeadline, goroutineDump())
		return nil
	}
}

// faultRig is one run of a workflow: its device, copier and what to close.
type faultRig struct {
	t       *testing.T
	n       int64 // the fault position
	dev     *sim.Device
	c       *transfer.Copier
	closers []faultCloser // closed last first
	armed   bool
	others  []*sim.Device // other devices the workflow uses
}

// fault returns the sticky error of the rig's device, or of another one
// the workflow uses, nil while none has faulted.
func (r *faultRig) fault() error {
	for _, d := range append([]*sim.Device{r.dev}, r.others...) {
		if err := d.Fault(); err != nil {
			return err
		}
	}
	return nil
}

type faultCloser struct {
	name string
	f    func() error
}

// onClose adds f to what is closed after the workflow (the last added first).
func (r *faultRig) onClose(name string, f func() error) {
	r.closers = append(r.closers, faultCloser{name, f})
}

// arm starts the countdown: the device work before it (setting up the
// arrays) is not swept.
func (r *faultRig) arm() {
	r.dev.FailFault(r.n)
	r.armed = true
}

func (r *faultRig) at(what string) string { return fmt.Sprintf("fault at %d: %s", r.n, what) }

// sync runs a synchronous call: an error must say ErrContextFailed; nil
// means the call did its work, so the device cannot have faulted in it.
// It reports whether the call returned nil.
func (r *faultRig) sync(what string, f func() error) bool {
	r.t.Helper()
	err := within(r.t, r.at(what), f)
	if err != nil {
		assert.ErrorIs(r.t, err, device.ErrContextFailed, r.at(what))
		assert.Error(r.t, r.dev.Fault(), "%s failed on a device that did not fault", r.at(what))
		return false
	}
	assert.NoError(r.t, r.dev.Fault(), "%s returned nil although its work faulted", r.at(what))
	return true
}

// call runs a call whose work may run after it returns (CopyAsync, Wait
// on work queued on other streams as well): an error must say
// ErrContextFailed. It reports whether the call returned nil.
func (r *faultRig) call(what string, f func() error) bool {
	r.t.Helper()
	err := within(r.t, r.at(what), f)
	if err != nil {
		assert.ErrorIs(r.t, err, device.ErrContextFailed, r.at(what))
		return false
	}
	return true
}

// doneLoop polls op.Done until it reports true, as a caller that never
// calls Wait does: once the device has faulted Done must report true with
// the error, not false for ever. It reports whether the copy completed
// without an error. (A true with no error after the fault is no lie: the
// copy may have completed before, and the copier reaped it then.)
func (r *faultRig) doneLoop(what string, op *transfer.Op) bool {
	r.t.Helper()
	return r.call(what, func() error {
		for {
			done, err := op.Done()
			if done {
				return err
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
}

// onTheStream reports whether an async copy along path p of pageable or
// page-locked memory is queued on the caller's stream, whose errors Wait
// then collects: not a staged copy, nor a direct one, which run on the
// copier's goroutines (a driver copy of pageable memory waits).
func onTheStream(p transfer.Path) bool { return p != transfer.PathStaged && p != transfer.PathDirect }

// wait calls op.Wait. Wait synchronizes the stream of a copy queued on it
// (not staged), which fails once the device has faulted: a nil then is a
// lie. It reports whether Wait returned nil.
func (r *faultRig) wait(what string, op *transfer.Op, queued bool) bool {
	r.t.Helper()
	before := r.dev.Fault()
	ok := r.call(what, op.Wait)
	if ok && queued {
		assert.NoError(r.t, before, "%s returned nil after the device faulted", r.at(what))
	}
	return ok
}

// sweepFault runs workflow for every fault position, with latency 0 and 1 ms.
func sweepFault(t *testing.T, opts []transfer.Option, workflow func(r *faultRig)) {
	for _, latency := range faultLatencies {
		t.Run(latency.String(), func(t *testing.T) {
			faulted := 0
			for n := int64(1); ; n++ {
				require.Less(t, n, int64(faultMaxN), "the workflow never ran without a fault")
				if !runFault(t, n, latency, opts, workflow) || t.Failed() {
					break
				}
				faulted++
			}
			assert.Positive(t, faulted, "the workflow did device work")
			t.Logf("%d fault positions", faulted)
		})
	}
}

// runFault runs workflow with the fault at n, closes everything and checks
// the ledger and goroutines. It reports whether the device faulted.
func runFault(t *testing.T, n int64, latency time.Duration, opts []transfer.Option, workflow func(r *faultRig)) bool {
	t.Helper()
	goroutines := runtime.NumGoroutine()
	dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency})
	require.NoError(t, err)
	r := &faultRig{t: t, n: n, dev: dev}
	r.c, err = transfer.New(dev, opts...)
	require.NoError(t, err)
	r.onClose("Copier.Close", r.c.Close)
	workflow(r)
	require.True(t, r.armed, "the workflow arms the fault")
	for i := len(r.closers) - 1; i >= 0; i-- {
		cl := r.closers[i]
		err := within(t, r.at(cl.name), cl.f)
		if r.fault() == nil { // work queued before may fault after the workflow, in a Close
			assert.NoError(t, err, r.at(cl.name)+" without a fault")
		} else if err != nil {
			assert.ErrorIs(t, err, device.ErrContextFailed, r.at(cl.name))
		}
	}
	faulted := r.fault() != nil
	bytes, count := r.c.Registered()
	assert.Zero(t, bytes+int64(count), r.at("registrations left after Close"))
	require.NoError(t, within(t, r.at("Device.Close"), dev.Close))
	snap := dev.Ledger().Snapshot()
	for k := accounting.Kind(0); k < accounting.NumKinds; k++ {
		assert.Zero(t, snap.Kinds[k].Current, r.at(fmt.Sprintf("%v bytes after the device's Close", k)))
	}
	// a plain loop: assert.Eventually runs its condition on goroutines of its own
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if left := runtime.NumGoroutine(); left > goroutines {
		t.Errorf("%s: %d goroutines left running (%d before); goroutines:\n%s", r.at("after Close"), left-goroutines, goroutines, goroutineDump())
	}
	return faulted
}

// faultHost is a kind of host memory and the path a workflow copies it by.
type faultHost struct {
	name   string
	path   transfer.Path // Via; PathAuto: the planner's
	pinned bool
	flags  pinned.Flags
}

var faultHosts = []faultHost{
	{name: "direct", path: transfer.PathDirect},
	{name: "pinned", path: transfer.PathPinned, pinned: true},
	{name: "mapped", path: transfer.PathMapped, pinned: true, flags: pinned.Mapped},
	{name: "write-combined", path: transfer.PathPinned, pinned: true, flags: pinned.WriteCombined},
	{name: "staged", path: transfer.PathStaged},
	{name: "registered", path: transfer.PathRegistered},
	{name: "planner-registered", path: transfer.PathAuto}, // with registeringProfile: the planner registers
}

// faultOpts are a workflow's copier options for host kind h: a small ring
// (many chunks, each slot reused) and, for the planner's registered path,
// a profile where registering is all but free and the other paths slow.
func faultOpts(t *testing.T, h faultHost) []transfer.Option {
	opts := []transfer.Option{transfer.WithRing(256, 2, 2)}
	if h.name == "planner-registered" {
		p := transfer.DefaultProfile(driver.Info{Model: "NVIDIA H100 80GB HBM3", Backend: "cuda"})
		require.NoError(t, p.SetRegistrationCost(transfer.Cost{GBps: 1e4}))
		for _, path := range []transfer.Path{transfer.PathDirect, transfer.PathStaged} {
			for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
				require.NoError(t, p.SetCost(path, dir, transfer.Cost{Latency: time.Second, GBps: 1e-3}, 0))
			}
		}
		require.NoError(t, p.Validate())
		opts = append(opts, transfer.WithProfile(p))
	}
	return opts
}

// pageFloats returns n float32s on pages of their own: registering one
// buffer never has to unregister another's pages.
func pageFloats(n int) []float32 {
	page := os.Getpagesize()
	raw := make([]float32, n+2*page/4)
	off := (page - int(uintptr(unsafe.Pointer(&raw[0])))%page) % page
	return raw[off/4 : off/4+n]
}

// faultHostSide is host memory of a kind, holding vals.
type faultHostSide struct {
	ep   transfer.Endpoint
	read func() []float32
}

// host makes host memory of kind h holding vals, shaped shape.
func (r *faultRig) host(h faultHost, vals []float32, shape []int) faultHostSide {
	r.t.Helper()
	if !h.pinned {
		mem := pageFloats(len(vals))
		copy(mem, vals)
		return faultHostSide{ep: transfer.Host(mem, shape...), read: func() []float32 { return slices.Clone(mem) }}
	}
	b, err := pinned.Alloc(r.dev, int64(4*len(vals)), h.flags)
	require.NoError(r.t, err)
	r.onClose("pinned.Free", b.Free)
	copy(b.Float32(), vals)
	return faultHostSide{ep: transfer.Pinned(b, devarray.Float32, shape...), read: func() []float32 { return slices.Clone(b.Float32()) }}
}

// faultLayout is a device array seen through a view: contiguous, or one
// of the strided layouts that take the pitched copies or pack kernels.
type faultLayout struct {
	name   string
	parent []int // the array's shape
	view   func(a *devarray.DevArray) (*devarray.DevArray, error)
}

var faultLayouts = []faultLayout{
	{"contiguous", []int{12, 20}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a, nil }},
	{"columns", []int{12, 27}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Slice(1, 3, 23) }},           // rows with a pitch: a pitched 2-D copy
	{"transposed", []int{20, 12}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Transpose() }},            // a pack kernel
	{"permuted", []int{4, 6, 10}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Permute(1, 0, 2) }},       // a pitched 3-D copy
	{"permuted-inner", []int{4, 6, 10}, func(a *devarray.DevArray) (*devarray.DevArray, error) { return a.Permute(2, 0, 1) }}, // a pack kernel
}

// device makes a device array of layout l filled with random values,
// before the fault is armed, and returns its view.
func (r *faultRig) device(l faultLayout) *devarray.DevArray {
	r.t.Helper()
	n := 1
	for _, d := range l.parent {
		n *= d
	}
	a, err := devarray.FromHost(r.dev, randomFloats(n), l.parent...)
	require.NoError(r.t, err)
	r.onClose("DevArray.Free", a.Free)
	v, err := l.view(a)
	require.NoError(r.t, err)
	return v
}

// faultPair is a round trip through one device view: src in, back out.
type faultPair struct {
	name      string
	view      *devarray.DevArray
	src, back faultHostSide
	want      []float32
}

// pairs makes one round trip per layout for host kind h.
func (r *faultRig) pairs(h faultHost, layouts []faultLayout) []faultPair {
	r.t.Helper()
	var ps []faultPair
	for _, l := range layouts {
		v := r.device(l)
		want := randomFloats(int(v.Size()))
		p := faultPair{name: l.name, view: v, want: want,
			src: r.host(h, want, v.Shape()), back: r.host(h, randomFloats(len(want)), v.Shape())}
		if h.path == transfer.PathAuto {
			for _, dir := range []struct{ dst, src transfer.Endpoint }{{transfer.Dev(v), p.src.ep}, {p.back.ep, transfer.Dev(v)}} {
				ch, err := r.c.Plan(dir.dst, dir.src)
				require.NoError(r.t, err)
				require.Equal(r.t, transfer.PathRegistered, ch.Path, "%s: the planner registers (%s)", l.name, ch.Reason)
			}
		}
		ps = append(ps, p)
	}
	return ps
}

func via(p transfer.Path) []transfer.Option {
	if p == transfer.PathAuto {
		return nil
	}
	return []transfer.Option{transfer.Via(p)}
}

// Synchronous copies on every host path, both ways, through every device
// layout: each returns nil with its bytes right, or ErrContextFailed.
func TestFaultCopy(t *testing.T) {
	for _, h := range faultHosts {
		t.Run(h.name, func(t *testing.T) {
			sweepFault(t, faultOpts(t, h), func(r *faultRig) {
				ps := r.pairs(h, faultLayouts)
				r.arm()
				for _, p := range ps {
					in := r.sync(p.name+" HtoD", func() error { return r.c.Copy(transfer.Dev(p.view), p.src.ep, via(h.path)...) })
					out := r.sync(p.name+" DtoH", func() error { return r.c.Copy(p.back.ep, transfer.Dev(p.view), via(h.path)...) })
					if in && out {
						assert.Equal(t, p.want, p.back.read(), r.at(p.name+": the round trip"))
					}
				}
			})
		})
	}
}

// Device-to-device copies between layouts: one driver copy or pack kernels.
func TestFaultCopyD2D(t *testing.T) {
	sweepFault(t, nil, func(r *faultRig) {
		type d2d struct {
			name     string
			dst, src *devarray.DevArray
		}
		var cs []d2d
		for _, l := range [][2]faultLayout{{faultLayouts[0], faultLayouts[0]}, {faultLayouts[0], faultLayouts[2]}, {faultLayouts[2], faultLayouts[1]}} {
			cs = append(cs, d2d{l[0].name + "<-" + l[1].name, r.device(l[0]), r.device(l[1])})
		}
		want := make([][]float32, len(cs))
		for i, c := range cs {
			want[i] = randomFloats(int(c.src.Size()))
			require.NoError(t, c.src.CopyFrom(devarray.AsBytes(want[i])))
		}
		r.arm()
		for i, c := range cs {
			if !r.sync(c.name, func() error { return r.c.Copy(transfer.Dev(c.dst), transfer.Dev(c.src)) }) {
				continue
			}
			got := make([]float32, len(want[i]))
			if r.sync(c.name+" read back", func() error { return r.c.Copy(transfer.Host(got, c.dst.Shape()...), transfer.Dev(c.dst)) }) {
				assert.Equal(t, want[i], got, r.at(c.name))
			}
		}
	})
}

// faultStreams makes n streams, closed after the workflow.
func (r *faultRig) streams(n int) []driver.Stream {
	r.t.Helper()
	ss := make([]driver.Stream, n)
	for i := range ss {
		s, err := r.dev.NewStream()
		require.NoError(r.t, err)
		r.onClose("Stream.Close", s.Close)
		ss[i] = s
	}
	return ss
}

// Async copies on every host path, several in flight on two streams when
// the fault hits; half are ended by Wait, half by a Done polling loop
// (which must end: Done reports true, with the error, once the device has
// faulted).
func TestFaultCopyAsync(t *testing.T) {
	layouts := []faultLayout{faultLayouts[0], faultLayouts[2], faultLayouts[3]}
	for _, h := range faultHosts {
		t.Run(h.name, func(t *testing.T) {
			sweepFault(t, faultOpts(t, h), func(r *faultRig) {
				ps := r.pairs(h, layouts)
				ss := r.streams(2)
				r.arm()
				ins, outs := make([]*transfer.Op, len(ps)), make([]*transfer.Op, len(ps))
				for i, p := range ps {
					s := ss[i%2]
					r.call(p.name+" CopyAsync HtoD", func() (err error) {
						ins[i], err = r.c.CopyAsync(s, transfer.Dev(p.view), p.src.ep, via(h.path)...)
						return err
					})
					r.call(p.name+" CopyAsync DtoH", func() (err error) {
						outs[i], err = r.c.CopyAsync(s, p.back.ep, transfer.Dev(p.view), via(h.path)...)
						return err
					})
				}
				for i, p := range ps {
					end := func(what string, op *transfer.Op) bool {
						if op == nil {
							return false
						}
						queued := onTheStream(h.path)
						if i%2 == 0 {
							ok := r.doneLoop(p.name+" "+what+" Done", op)
							return r.wait(p.name+" "+what+" Wait after Done", op, queued) && ok
						}
						return r.wait(p.name+" "+what+" Wait", op, queued)
					}
					out := end("DtoH", outs[i])
					in := end("HtoD", ins[i])
					if in && out {
						assert.Equal(t, p.want, p.back.read(), r.at(p.name+": the round trip"))
					}
				}
			})
		})
	}
}

// Close after the fault with async copies still unreaped and registrations
// cached: Close returns (waiting for the copies) and frees it all. In the
// second variant the device arrays are freed first, while the copies hold
// them.
func TestFaultCloseUnreaped(t *testing.T) {
	layouts := []faultLayout{faultLayouts[0], faultLayouts[2]}
	for _, freeFirst := range []bool{false, true} {
		for _, h := range faultHosts {
			t.Run(fmt.Sprintf("%s/free-arrays-first=%v", h.name, freeFirst), func(t *testing.T) {
				sweepFault(t, faultOpts(t, h), func(r *faultRig) {
					ps := r.pairs(h, layouts)
					ss := r.streams(2)
					r.arm()
					for i, p := range ps {
						// a synchronous copy first: a registration cached, the ring allocated;
						// the async copies queued before it may fault while it runs
						check := r.sync
						if i > 0 {
							check = r.call
						}
						check(p.name+" Copy", func() error { return r.c.Copy(transfer.Dev(p.view), p.src.ep, via(h.path)...) })
						r.call(p.name+" CopyAsync", func() error {
							_, err := r.c.CopyAsync(ss[i%2], p.back.ep, transfer.Dev(p.view), via(h.path)...)
							return err
						})
					}
					if freeFirst {
						// the arrays' Free marks them freed; the copies' holds give the memory back
						for i := len(r.closers) - 1; i >= 0; i-- {
							if cl := r.closers[i]; cl.name == "DevArray.Free" {
								r.call("DevArray.Free while held", cl.f)
							}
						}
					}
					r.onClose("Copier.Close first", r.c.Close)
				})
			})
		}
	}
}

// A Copier made on a device that faulted already: New returns one (it
// does no device work), every copy on every path fails with
// ErrContextFailed, and Close frees what the copies tried to allocate.
func TestFaultNewOnFaultedDevice(t *testing.T) {
	for _, h := range faultHosts {
		t.Run(h.name, func(t *testing.T) {
			for _, latency := range faultLatencies {
				runFault(t, 1, latency, faultOpts(t, h), func(r *faultRig) {
					ps := r.pairs(h, faultLayouts)
					ss := r.streams(1)
					c0 := r.c
					r.arm()
					assert.ErrorIs(t, r.dev.Memset(ps[0].view.Ptr(), 1, 4), device.ErrContextFailed, "the device faults")
					var err error
					r.c, err = transfer.New(r.dev, faultOpts(t, h)...)
					require.NoError(t, err, "New does no device work")
					r.onClose("the second Copier's Close", r.c.Close)
					for _, p := range ps {
						r.sync(p.name+" HtoD", func() error {
							err := r.c.Copy(transfer.Dev(p.view), p.src.ep, via(h.path)...)
							assert.NotContains(t, fmt.Sprint(err), "so by the", "no other path is tried on a failed context")
							return err
						})
						r.sync(p.name+" DtoH", func() error { return r.c.Copy(p.back.ep, transfer.Dev(p.view), via(h.path)...) })
						r.call(p.name+" CopyAsync", func() error {
							op, err := r.c.CopyAsync(ss[0], p.back.ep, transfer.Dev(p.view), via(h.path)...)
							if err == nil {
								err = op.Wait()
								assert.Error(t, err, "a copy on a faulted device did not happen")
							}
							return err
						})
					}
					require.NoError(t, c0.Close(), "the first Copier did nothing")
				})
			}
		})
	}
}

// hostStrided makes host memory of kind h holding vals, shape [rows, cols],
// transposed inside a padded block (column-major, a pitch of rows+3
// elements): the copies gather or scatter it, or take a pitched copy.
func (r *faultRig) hostStrided(h faultHost, vals []float32, rows, cols int) faultHostSide {
	r.t.Helper()
	pitch := rows + 3
	var mem []float32
	var ep transfer.Endpoint
	if h.pinned {
		b, err := pinned.Alloc(r.dev, int64(4*cols*pitch), h.flags)
		require.NoError(r.t, err)
		r.onClose("pinned.Free", b.Free)
		mem = b.Float32()
		ep = transfer.Pinned(b, devarray.Float32, rows, cols)
	} else {
		mem = pageFloats(cols * pitch)
		ep = transfer.HostBytes(devarray.AsBytes(mem), devarray.Float32, rows, cols)
	}
	copy(mem, randomFloats(len(mem)))
	for i := range rows {
		for j := range cols {
			mem[j*pitch+i] = vals[i*cols+j]
		}
	}
	read := func() []float32 {
		out := make([]float32, rows*cols)
		for i := range rows {
			for j := range cols {
				out[i*cols+j] = mem[j*pitch+i]
			}
		}
		return out
	}
	return faultHostSide{ep: ep.Strided(0, 4, int64(4*pitch)), read: read}
}

// Strided host sides (gathered, scattered or pitched), sync and async,
// to contiguous and transposed device arrays.
func TestFaultCopyHostStrided(t *testing.T) {
	for _, h := range faultHosts {
		if h.path == transfer.PathRegistered || h.path == transfer.PathAuto {
			continue // the registered path takes contiguous host sides only
		}
		t.Run(h.name, func(t *testing.T) {
			sweepFault(t, faultOpts(t, h), func(r *faultRig) {
				var ps []faultPair
				for _, l := range []faultLayout{faultLayouts[0], faultLayouts[2]} {
					v := r.device(l)
					shape := v.Shape()
					want := randomFloats(int(v.Size()))
					ps = append(ps, faultPair{name: l.name, view: v, want: want,
						src:  r.hostStrided(h, want, shape[0], shape[1]),
						back: r.hostStrided(h, randomFloats(len(want)), shape[0], shape[1])})
				}
				s := r.streams(1)[0]
				r.arm()
				for _, p := range ps {
					in := r.sync(p.name+" HtoD", func() error { return r.c.Copy(transfer.Dev(p.view), p.src.ep, via(h.path)...) })
					out := r.sync(p.name+" DtoH", func() error { return r.c.Copy(p.back.ep, transfer.Dev(p.view), via(h.path)...) })
					if in && out {
						assert.Equal(t, p.want, p.back.read(), r.at(p.name+": the round trip"))
					}
				}
				for _, p := range ps {
					var in, out *transfer.Op
					r.call(p.name+" CopyAsync HtoD", func() (err error) {
						in, err = r.c.CopyAsync(s, transfer.Dev(p.view), p.back.ep, via(h.path)...)
						return err
					})
					r.call(p.name+" CopyAsync DtoH", func() (err error) {
						out, err = r.c.CopyAsync(s, p.src.ep, transfer.Dev(p.view), via(h.path)...)
						return err
					})
					queued := onTheStream(h.path)
					okOut := out != nil && r.doneLoop(p.name+" DtoH Done", out)
					okIn := in != nil && r.wait(p.name+" HtoD Wait", in, queued)
					if okIn && okOut {
						assert.Equal(t, p.back.read(), p.src.read(), r.at(p.name+": the async round trip"))
					}
				}
			})
		})
	}
}

// Async copies in flight on two streams when the fault hits, ended at
// once from several goroutines: a Done loop and a Wait on each copy, and
// the Copier's Close, all racing (run with -race).
func TestFaultEndConcurrently(t *testing.T) {
	layouts := []faultLayout{faultLayouts[0], faultLayouts[2]}
	for _, h := range []faultHost{faultHosts[0], faultHosts[4], faultHosts[5]} { // direct, staged, registered
		t.Run(h.name, func(t *testing.T) {
			sweepFault(t, faultOpts(t, h), func(r *faultRig) {
				ps := r.pairs(h, layouts)
				ss := r.streams(2)
				r.arm()
				var ops []*transfer.Op
				for i, p := range ps {
					r.call(p.name+" CopyAsync HtoD", func() error {
						op, err := r.c.CopyAsync(ss[i%2], transfer.Dev(p.view), p.src.ep, via(h.path)...)
						if err == nil {
							ops = append(ops, op)
						}
						return err
					})
				}
				errs := make(chan error, 2*len(ops)+1)
				for _, op := range ops {
					go func() {
						for {
							if done, err := op.Done(); done {
								errs <- err
								return
							}
							time.Sleep(20 * time.Microsecond)
						}
					}()
					go func() { errs <- op.Wait() }()
				}
				go func() { errs <- r.c.Close() }()
				deadline := time.After(faultDeadline)
				for range 2*len(ops) + 1 {
					select {
					case err := <-errs:
						if err != nil {
							assert.ErrorIs(t, err, device.ErrContextFailed, r.at("ending the copies"))
						}
					case <-deadline:
						t.Fatalf("%s: Done loops, Waits and Close did not all return within %v; goroutines:\n%s", r.at("ending the copies"), faultDeadline, goroutineDump())
					}
				}
			})
		})
	}
}

// Peer copies between two sim devices, contiguous and strided on either
// side (pack kernels on the source, an unpack kernel on the destination),
// with the fault on the source device and, in the second variant, on the
// destination: the copier's device, the source, must still close clean,
// and so must the other.
func TestFaultCopyPeer(t *testing.T) {
	for _, onDst := range []bool{false, true} {
		t.Run(fmt.Sprintf("fault-on-destination=%v", onDst), func(t *testing.T) {
			sweepFault(t, nil, func(r *faultRig) {
				other, err := sim.New(sim.Config{Ordinal: 1, Memory: 16 << 20, Latency: r.dev.Latency()})
				require.NoError(t, err)
				r.others = append(r.others, other)
				r.onClose("the other device's Close", func() error {
					err := other.Close()
					snap := other.Ledger().Snapshot()
					for k := accounting.Kind(0); k < accounting.NumKinds; k++ {
						assert.Zero(t, snap.Kinds[k].Current, r.at(fmt.Sprintf("%v bytes on the other device after its Close", k)))
					}
					return err
				})
				type peer struct {
					name     string
					dst, src *devarray.DevArray
					want     []float32
				}
				var cs []peer
				for _, l := range [][2]faultLayout{{faultLayouts[0], faultLayouts[0]}, {faultLayouts[0], faultLayouts[2]}, {faultLayouts[2], faultLayouts[0]}} {
					src := r.device(l[1])
					parent, err := devarray.FromHost(other, randomFloats(shapeSize(l[0].parent)), l[0].parent...)
					require.NoError(t, err)
					r.onClose("DevArray.Free on the other device", parent.Free)
					dst, err := l[0].view(parent)
					require.NoError(t, err)
					want := randomFloats(int(src.Size()))
					require.NoError(t, src.CopyFrom(devarray.AsBytes(want)))
					cs = append(cs, peer{l[0].name + "<-" + l[1].name, dst, src, want})
				}
				if onDst {
					other.FailFault(r.n)
					r.armed = true
				} else {
					r.arm()
				}
				for _, c := range cs {
					err := within(t, r.at(c.name), func() error { return r.c.Copy(transfer.Dev(c.dst), transfer.Dev(c.src)) })
					if err != nil {
						assert.ErrorIs(t, err, device.ErrContextFailed, r.at(c.name))
						continue
					}
					assert.NoError(t, r.dev.Fault(), r.at(c.name+" returned nil although the source faulted"))
					assert.NoError(t, other.Fault(), r.at(c.name+" returned nil although the destination faulted"))
					got := make([]float32, len(c.want))
					if err := c.dst.CopyTo(devarray.AsBytes(got)); err != nil {
						assert.ErrorIs(t, err, device.ErrContextFailed, r.at(c.name+" read back"))
						continue
					}
					assert.Equal(t, c.want, got, r.at(c.name))
				}
			})
		})
	}
}

func shapeSize(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
