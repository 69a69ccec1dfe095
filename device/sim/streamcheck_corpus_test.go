package sim_test

import (
	"crypto/rand"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/device/sim"
	"github.com/cuarray/cuarray/pool"
)

// raceEnv is one corpus program's device, with its streams, buffers and
// events by the names the program gives them.
type raceEnv struct {
	t       *testing.T
	dev     *sim.Device
	streams map[string]driver.Stream
	bufs    map[string]devarray.Ptr
	host    map[string]*driver.HostMem
	events  map[string]driver.Event
	pool    *pool.Pool
}

const bufBytes = 4096

func newRaceEnv(t *testing.T, latency time.Duration) *raceEnv {
	dev, err := sim.New(sim.Config{Memory: 16 << 20, Latency: latency, CheckStreams: true})
	require.NoError(t, err)
	e := &raceEnv{t: t, dev: dev, streams: map[string]driver.Stream{}, bufs: map[string]devarray.Ptr{},
		host: map[string]*driver.HostMem{}, events: map[string]driver.Event{}}
	t.Cleanup(func() {
		for _, s := range e.streams {
			s.Close()
		}
		dev.Close()
	})
	return e
}

// stream returns the stream called name, made on first use ("N..." names
// are non-blocking streams).
func (e *raceEnv) stream(name string) driver.Stream {
	if s, ok := e.streams[name]; ok {
		return s
	}
	var s driver.Stream
	var err error
	if strings.HasPrefix(name, "N") {
		s, err = e.dev.NewNonBlockingStream()
	} else {
		s, err = e.dev.NewStream()
	}
	require.NoError(e.t, err)
	e.streams[name] = s
	return s
}

// label is what a report calls the stream named name.
func (e *raceEnv) label(name string) string {
	switch name {
	case "legacy":
		return "the legacy default stream"
	case "host":
		return "the host"
	case "per-thread":
		return "the per-thread default stream of thread"
	}
	s := e.streams[name]
	require.NotNil(e.t, s, "stream %s", name)
	if strings.HasPrefix(name, "N") {
		return fmt.Sprintf("non-blocking stream %#x", s.Handle())
	}
	return fmt.Sprintf("stream %#x", s.Handle())
}

// buf returns the device buffer called name, filled with random bytes on first use.
func (e *raceEnv) buf(name string) devarray.Ptr {
	if p, ok := e.bufs[name]; ok {
		return p
	}
	p, err := e.dev.Malloc(bufBytes)
	require.NoError(e.t, err)
	require.NoError(e.t, e.dev.CopyHtoD(p, randomBytes(bufBytes)))
	e.bufs[name] = p
	return p
}

// pinned returns the page-locked host buffer called name ("M..." names are mapped).
func (e *raceEnv) pinned(name string) *driver.HostMem {
	if h, ok := e.host[name]; ok {
		return h
	}
	flags := driver.HostFlags(0)
	if strings.HasPrefix(name, "M") {
		flags = driver.Mapped
	}
	h, err := e.dev.HostAlloc(bufBytes, flags)
	require.NoError(e.t, err)
	copy(h.Bytes, randomBytes(bufBytes))
	e.host[name] = h
	return h
}

func (e *raceEnv) event(name string) driver.Event {
	if ev, ok := e.events[name]; ok {
		return ev
	}
	ev, err := e.dev.NewEvent()
	require.NoError(e.t, err)
	e.events[name] = ev
	return ev
}

// kernel launches a kernel on stream name ("legacy": without a stream)
// that reads the buffers in reads and writes those in writes, whole.
func (e *raceEnv) kernel(name string, reads, writes []devarray.Ptr) error {
	var s driver.Stream
	if name != "legacy" {
		s = e.stream(name)
	}
	var ranges []driver.Range
	for _, p := range reads {
		ranges = append(ranges, driver.Range{Ptr: p, N: bufBytes, ReadOnly: true})
	}
	for _, p := range writes {
		ranges = append(ranges, driver.Range{Ptr: p, N: bufBytes})
	}
	return e.dev.Launch(s, ranges, func(mem [][]byte) error {
		for i := len(reads); i < len(mem); i++ {
			for j := range mem[i] {
				mem[i][j] ^= mem[0][j%len(mem[0])]
			}
		}
		return nil
	})
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// side names one operation of a race: its kind and the stream it was queued on.
type side struct{ kind, stream string }

// raceProgram is one program of the corpus: steps run in order until one fails.
type raceProgram struct {
	name  string
	steps func(e *raceEnv) []func() error
	// op and prev are the two operations a buggy program's report names:
	// the racing one and the earlier one. Twins leave them empty.
	op, prev side
	// rule is the stream-ordered lifetime rule a buggy program breaks, if any.
	rule sim.Lifetime
}

func runRaceProgram(t *testing.T, p raceProgram, latency time.Duration) (*raceEnv, error) {
	e := newRaceEnv(t, latency)
	for _, step := range p.steps(e) {
		if err := step(); err != nil {
			return e, err
		}
	}
	return e, e.dev.Synchronize()
}

// streamBugs is the corpus of seeded stream bugs: each is reported, naming
// the right two operations, whatever the latency.
var streamBugs = []raceProgram{
	{name: "kernel reads what another stream's copy still fills",
		steps: func(e *raceEnv) []func() error {
			a, h, out := e.buf("a"), e.pinned("h"), e.buf("out")
			return []func() error{
				func() error { return e.stream("A").CopyHtoDAsync(a, h.Bytes) },
				func() error { return e.kernel("B", []devarray.Ptr{a}, []devarray.Ptr{out}) },
			}
		},
		op: side{"kernel", "B"}, prev: side{"async copy HtoD", "A"}},
	{name: "copy reads what another stream's memset writes",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 7, bufBytes) },
				func() error { return e.stream("B").CopyDtoDAsync(b, a, bufBytes) },
			}
		},
		op: side{"async copy DtoD", "B"}, prev: side{"async memset", "A"}},
	{name: "two streams write the same bytes",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 1, bufBytes) },
				func() error { return e.stream("B").MemsetAsync(a+128, 2, 256) },
			}
		},
		op: side{"async memset", "B"}, prev: side{"async memset", "A"}},
	{name: "a stream overwrites what another stream's kernel still reads",
		steps: func(e *raceEnv) []func() error {
			a, out := e.buf("a"), e.buf("out")
			return []func() error{
				func() error { return e.kernel("A", []devarray.Ptr{a}, []devarray.Ptr{out}) },
				func() error { return e.stream("B").CopyHtoDAsync(a, randomBytes(bufBytes)) },
			}
		},
		op: side{"async copy HtoD", "B"}, prev: side{"kernel", "A"}},
	{name: "overlapping views at different offsets",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 3, 512) },
				func() error { return e.stream("B").CopyDtoDAsync(b, a+256, 512) },
			}
		},
		op: side{"async copy DtoD", "B"}, prev: side{"async memset", "A"}},
	{name: "event recorded before the write it should cover",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").Record(e.event("e")) },
				func() error { return e.stream("A").MemsetAsync(a, 4, bufBytes) },
				func() error { return e.stream("B").WaitEvent(e.event("e")) },
				func() error { return e.stream("B").CopyDtoDAsync(b, a, bufBytes) },
			}
		},
		op: side{"async copy DtoD", "B"}, prev: side{"async memset", "A"}},
	{name: "the wait is made on the wrong stream",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 5, bufBytes) },
				func() error { return e.stream("A").Record(e.event("e")) },
				func() error { return e.stream("C").WaitEvent(e.event("e")) },
				func() error { return e.stream("B").CopyDtoDAsync(b, a, bufBytes) },
			}
		},
		op: side{"async copy DtoD", "B"}, prev: side{"async memset", "A"}},
	{name: "the wrong stream is synchronized before reuse",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 6, bufBytes) },
				func() error { return e.stream("B").Synchronize() },
				func() error { return e.stream("B").CopyDtoDAsync(b, a, bufBytes) },
			}
		},
		op: side{"async copy DtoD", "B"}, prev: side{"async memset", "A"}},
	{name: "a non-blocking stream's write and a synchronous read",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("N").MemsetAsync(a, 8, bufBytes) },
				func() error { return e.dev.CopyDtoH(make([]byte, bufBytes), a) },
			}
		},
		op: side{"copy DtoH", "legacy"}, prev: side{"async memset", "N"}},
	{name: "a kernel without a stream reads what a non-blocking stream writes",
		steps: func(e *raceEnv) []func() error {
			a, h, out := e.buf("a"), e.pinned("h"), e.buf("out")
			return []func() error{
				func() error { return e.stream("N").CopyHtoDAsync(a, h.Bytes) },
				func() error { return e.kernel("legacy", []devarray.Ptr{a}, []devarray.Ptr{out}) },
			}
		},
		op: side{"kernel", "legacy"}, prev: side{"async copy HtoD", "N"}},
	{name: "free while another stream still reads",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("N").CopyDtoDAsync(b, a, bufBytes) },
				func() error { return e.dev.Free(a) },
			}
		},
		op: side{"free", "legacy"}, prev: side{"async copy DtoD", "N"}},
	{name: "the pool reuses a block across streams (its last stream was not named)",
		steps: func(e *raceEnv) []func() error {
			e.pool = pool.New(e.dev)
			var p, q devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.pool.Alloc(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 9, bufBytes) },
				func() error { return e.pool.Free(p) },                             // should be FreeAsync(p, A)
				func() (err error) { q, err = e.pool.Alloc(bufBytes); return err }, // then used on B
				func() error {
					require.Equal(e.t, p, q, "the pool reuses the block at once")
					return e.stream("B").MemsetAsync(q, 10, bufBytes)
				},
			}
		},
		op: side{"async memset", "B"}, prev: side{"async memset", "A"}},
	{name: "a host buffer reused before its async copy finished",
		steps: func(e *raceEnv) []func() error {
			h, a := e.pinned("h"), e.buf("a")
			return []func() error{
				func() error { return e.stream("A").CopyHtoDAsync(a, h.Bytes) },
				func() error { return sim.HostWrite(e.dev, h.Bytes[100:200]) },
			}
		},
		op: side{"host write", "host"}, prev: side{"async copy HtoD", "A"}},
	{name: "a host buffer written by a copy while another copy reads it",
		steps: func(e *raceEnv) []func() error {
			h, a, b := e.pinned("h"), e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").CopyHtoDAsync(a, h.Bytes) },
				func() error { return e.stream("B").CopyDtoHAsync(h.Bytes[:1024], b) },
			}
		},
		op: side{"async copy DtoH", "B"}, prev: side{"async copy HtoD", "A"}},
	{name: "a mapped buffer written by the host while a kernel reads it",
		steps: func(e *raceEnv) []func() error {
			m, out := e.pinned("M"), e.buf("out")
			return []func() error{
				func() error { return e.kernel("A", []devarray.Ptr{m.DevPtr}, []devarray.Ptr{out}) },
				func() error { return sim.HostWrite(e.dev, m.Bytes) },
			}
		},
		op: side{"host write", "host"}, prev: side{"kernel", "A"}},
	{name: "the per-thread default stream from two goroutines",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{func() error { return perThreadRace(e, a, b) }}
		},
		op: side{"async copy DtoD", "per-thread"}, prev: side{"async memset", "per-thread"}},
	{name: "a 2-D copy writes rows another stream reads",
		steps: func(e *raceEnv) []func() error {
			a, b, h := e.buf("a"), e.buf("b"), e.pinned("h")
			return []func() error{
				func() error {
					return e.stream("A").Memcpy2DAsync(devarray.Memcpy2D{Dst: devarray.Place{Dev: a}, Src: devarray.Place{Dev: b},
						DstPitch: 256, SrcPitch: 256, Width: 64, Height: 8})
				},
				func() error { return e.stream("B").CopyDtoHAsync(h.Bytes[:64], a+3*256+32) },
			}
		},
		op: side{"async copy DtoH", "B"}, prev: side{"async copy 2D", "A"}},
	{name: "a 3-D copy reads a box another stream writes",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(b+2*512+128+8, 1, 8) },
				func() error {
					return e.stream("B").Memcpy3DAsync(devarray.Memcpy3D{Dst: devarray.Place{Dev: a}, Src: devarray.Place{Dev: b},
						DstPitch: 64, SrcPitch: 128, DstHeight: 4, SrcHeight: 4, Width: 32, Height: 2, Depth: 4})
				},
			}
		},
		op: side{"async copy 3D", "B"}, prev: side{"async memset", "A"}},
	{name: "a consumer ignores the producer's stream (array interface handoff)",
		steps: func(e *raceEnv) []func() error {
			a, out := e.buf("a"), e.buf("out")
			return []func() error{
				func() error { return e.kernel("producer", nil, []devarray.Ptr{a}) },
				// The consumer is handed the producer's stream handle and ignores it.
				func() error { return e.kernel("consumer", []devarray.Ptr{a}, []devarray.Ptr{out}) },
			}
		},
		op: side{"kernel", "consumer"}, prev: side{"kernel", "producer"}},
	{name: "a kernel on another stream reads memory after its async free",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			out := e.buf("out") // made first: its synchronous copy would order B after the free
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 1, bufBytes) },
				func() error { return e.stream("A").Record(e.event("filled")) },
				func() error { return e.stream("B").WaitEvent(e.event("filled")) },
				func() error { return e.stream("A").FreeAsync(p) },
				func() error { return e.kernel("B", []devarray.Ptr{p}, []devarray.Ptr{out}) },
			}
		},
		op: side{"kernel", "B"}, prev: side{"free async", "A"}, rule: sim.UseAfterFree},
	{name: "a copy queued on the freeing stream after the async free",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 2, bufBytes) },
				func() error { return e.stream("A").FreeAsync(p) },
				func() error { return e.stream("A").CopyDtoDAsync(e.buf("b"), p, bufBytes) },
			}
		},
		op: side{"async copy DtoD", "A"}, prev: side{"free async", "A"}, rule: sim.UseAfterFree},
	{name: "a synchronous copy reads memory after its async free",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 3, bufBytes) },
				func() error { return e.stream("A").FreeAsync(p) },
				func() error { return e.dev.CopyDtoH(make([]byte, bufBytes), p) },
			}
		},
		op: side{"copy DtoH", "legacy"}, prev: side{"free async", "A"}, rule: sim.UseAfterFree},
	{name: "another stream writes memory before its async allocation",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("B").MemsetAsync(p, 4, bufBytes) },
			}
		},
		op: side{"async memset", "B"}, prev: side{"malloc async", "A"}, rule: sim.UseBeforeAlloc},
	{name: "a synchronous copy writes what a non-blocking stream allocates from a pool",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() error {
					mp, err := e.dev.NewMemPool()
					if err != nil {
						return err
					}
					e.t.Cleanup(func() { mp.Destroy() })
					p, err = e.stream("N").MallocFromPoolAsync(bufBytes, mp)
					return err
				},
				func() error { return e.dev.CopyHtoD(p, randomBytes(bufBytes)) },
			}
		},
		op: side{"copy HtoD", "legacy"}, prev: side{"malloc from pool async", "N"}, rule: sim.UseBeforeAlloc},
	{name: "an async free races a kernel on another stream",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").Record(e.event("allocated")) },
				func() error { return e.stream("B").WaitEvent(e.event("allocated")) },
				func() error { return e.kernel("B", []devarray.Ptr{e.buf("a")}, []devarray.Ptr{p}) },
				func() error { return e.stream("A").FreeAsync(p) },
			}
		},
		op: side{"free async", "A"}, prev: side{"kernel", "B"}, rule: sim.FreeWhileInUse},
	{name: "a stale pointer used after the pool handed its block to another stream",
		steps: func(e *raceEnv) []func() error {
			var p, q devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").FreeAsync(p) },
				func() error { return e.stream("A").Record(e.event("freed")) },
				func() error { return e.stream("B").WaitEvent(e.event("freed")) },
				func() (err error) { q, err = e.stream("B").MallocAsync(bufBytes); return err },
				func() error {
					require.Equal(e.t, p, q, "the block is reused (follow-event-dependencies)")
					return e.stream("A").MemsetAsync(p, 5, bufBytes) // p is B's allocation now
				},
			}
		},
		op: side{"async memset", "A"}, prev: side{"malloc async", "B"}, rule: sim.UseBeforeAlloc},
}

// perThreadRace writes a on the per-thread default stream of one OS thread
// and copies it from another thread's, with nothing between them.
func perThreadRace(e *raceEnv, a, b devarray.Ptr) error {
	wrote, done := make(chan error), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		s, err := e.dev.ExternalStream(driver.PerThreadDefaultStream)
		if err == nil {
			err = s.MemsetAsync(a, 11, bufBytes)
		}
		wrote <- err
		<-done // hold this thread, so that the other goroutine runs on another
	}()
	defer close(done)
	if err := <-wrote; err != nil {
		return err
	}
	result := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		s, err := e.dev.ExternalStream(driver.PerThreadDefaultStream)
		if err == nil {
			err = s.CopyDtoDAsync(b, a, bufBytes)
		}
		result <- err
	}()
	return <-result
}

// orderedTwins are the corpus's correctly ordered programs: none is reported.
var orderedTwins = []raceProgram{
	{name: "an event orders the write before the read",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 4, bufBytes) },
				func() error { return e.stream("A").Record(e.event("e")) },
				func() error { return e.stream("B").WaitEvent(e.event("e")) },
				func() error { return e.stream("B").CopyDtoDAsync(b, a, bufBytes) },
			}
		}},
	{name: "events order a chain of three streams",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 4, bufBytes) },
				func() error { return e.stream("A").Record(e.event("e1")) },
				func() error { return e.stream("B").WaitEvent(e.event("e1")) },
				func() error { return e.stream("B").Record(e.event("e2")) },
				func() error { return e.stream("C").WaitEvent(e.event("e2")) },
				func() error { return e.stream("C").MemsetAsync(a, 5, bufBytes) },
				func() error { return e.stream("C").CopyDtoDAsync(b, a, bufBytes) },
			}
		}},
	{name: "disjoint ranges of one allocation",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 1, bufBytes/2) },
				func() error { return e.stream("B").MemsetAsync(a+bufBytes/2, 2, bufBytes/2) },
			}
		}},
	{name: "two streams read the same buffer",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.kernel("A", []devarray.Ptr{a}, []devarray.Ptr{e.buf("x")}) },
				func() error { return e.kernel("B", []devarray.Ptr{a}, []devarray.Ptr{e.buf("y")}) },
				func() error { return e.stream("C").CopyDtoHAsync(e.pinned("h").Bytes, a) },
			}
		}},
	{name: "the legacy default stream waits for a blocking stream",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 8, bufBytes) },
				func() error { return e.dev.CopyDtoH(make([]byte, bufBytes), a) },
			}
		}},
	{name: "a blocking stream waits for the legacy default stream, and it for another",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("A").CopyHtoDAsync(a, e.pinned("h").Bytes) },
				func() error { return e.kernel("legacy", nil, []devarray.Ptr{e.buf("x")}) },
				func() error { return e.kernel("B", []devarray.Ptr{a}, []devarray.Ptr{e.buf("out")}) },
			}
		}},
	{name: "synchronize, then reuse on another stream",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 6, bufBytes) },
				func() error { return e.stream("A").Synchronize() },
				func() error { return e.stream("B").CopyDtoDAsync(b, a, bufBytes) },
			}
		}},
	{name: "synchronize a non-blocking stream, then read synchronously",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("N").MemsetAsync(a, 8, bufBytes) },
				func() error { return e.stream("N").Synchronize() },
				func() error { return e.dev.CopyDtoH(make([]byte, bufBytes), a) },
			}
		}},
	{name: "free after the reading stream is synchronized",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("N").CopyDtoDAsync(b, a, bufBytes) },
				func() error { return e.event("e").Synchronize() }, // not recorded: orders nothing
				func() error { return e.stream("N").Record(e.event("e")) },
				func() error { return e.event("e").Synchronize() },
				func() error { return e.dev.Free(a) },
			}
		}},
	{name: "the pool is told the block's last stream",
		steps: func(e *raceEnv) []func() error {
			e.pool = pool.New(e.dev)
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.pool.AllocAsync(bufBytes, e.stream("A")); return err },
				func() error { return e.stream("A").MemsetAsync(p, 9, bufBytes) },
				func() error { return e.pool.FreeAsync(p, e.stream("A")) },
				func() error {
					q, err := e.pool.AllocAsync(bufBytes, e.stream("B"))
					if err != nil {
						return err
					}
					return e.stream("B").MemsetAsync(q, 10, bufBytes)
				},
			}
		}},
	{name: "a host buffer reused after its copy's stream is synchronized",
		steps: func(e *raceEnv) []func() error {
			h := e.pinned("h")
			return []func() error{
				func() error { return e.stream("A").CopyHtoDAsync(e.buf("a"), h.Bytes) },
				func() error { return e.stream("A").Synchronize() },
				func() error { return sim.HostWrite(e.dev, h.Bytes) },
				func() error { return e.stream("B").CopyDtoHAsync(h.Bytes[:1024], e.buf("b")) },
			}
		}},
	{name: "a mapped buffer written by the host after the kernel's event",
		steps: func(e *raceEnv) []func() error {
			m := e.pinned("M")
			return []func() error{
				func() error { return e.kernel("A", []devarray.Ptr{m.DevPtr}, []devarray.Ptr{e.buf("out")}) },
				func() error { return e.stream("A").Record(e.event("e")) },
				func() error {
					for {
						done, err := e.event("e").Query()
						if err != nil || done {
							return err
						}
						time.Sleep(100 * time.Microsecond)
					}
				},
				func() error { return sim.HostWrite(e.dev, m.Bytes) },
			}
		}},
	{name: "the per-thread default stream from one thread",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{func() error {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				s, err := e.dev.ExternalStream(driver.PerThreadDefaultStream)
				if err != nil {
					return err
				}
				if err := s.MemsetAsync(a, 11, bufBytes); err != nil {
					return err
				}
				return s.CopyDtoDAsync(b, a, bufBytes)
			}}
		}},
	{name: "2-D copies write interleaved columns of the same rows",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			copy2D := func(s string, col int64) func() error {
				return func() error {
					return e.stream(s).Memcpy2DAsync(devarray.Memcpy2D{Dst: devarray.Place{Dev: a + devarray.Ptr(col)}, Src: devarray.Place{Dev: b},
						DstPitch: 256, SrcPitch: 64, Width: 64, Height: 8})
				}
			}
			return []func() error{copy2D("A", 0), copy2D("B", 64), copy2D("C", 128)}
		}},
	{name: "device synchronization, then reuse",
		steps: func(e *raceEnv) []func() error {
			a, b := e.buf("a"), e.buf("b")
			return []func() error{
				func() error { return e.stream("A").MemsetAsync(a, 1, bufBytes) },
				func() error { return e.stream("N").MemsetAsync(b, 1, 8) },
				func() error { return e.dev.Synchronize() },
				func() error { return e.stream("B").MemsetAsync(a, 2, bufBytes) },
				func() error { return e.stream("B").MemsetAsync(b, 2, bufBytes) },
			}
		}},
	{name: "a write after a read on the same stream",
		steps: func(e *raceEnv) []func() error {
			a, out := e.buf("a"), e.buf("out")
			return []func() error{
				func() error { return e.kernel("A", []devarray.Ptr{a}, []devarray.Ptr{out}) },
				func() error { return e.stream("A").CopyHtoDAsync(a, randomBytes(bufBytes)) },
			}
		}},
	{name: "free waits for the default stream's kernel (cuMemFree synchronizes)",
		steps: func(e *raceEnv) []func() error {
			a, out := e.buf("a"), e.buf("out")
			return []func() error{
				func() error { return e.kernel("legacy", []devarray.Ptr{a}, []devarray.Ptr{out}) },
				func() error { return e.dev.Free(a) },
			}
		}},
	{name: "a copy to pageable memory returns when done",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.stream("A").CopyDtoHAsync(make([]byte, bufBytes), a) },
				func() error { return e.stream("B").MemsetAsync(a, 3, bufBytes) },
			}
		}},
	{name: "the consumer waits on the producer's stream (array interface handoff)",
		steps: func(e *raceEnv) []func() error {
			a := e.buf("a")
			return []func() error{
				func() error { return e.kernel("producer", nil, []devarray.Ptr{a}) },
				func() error {
					producer, err := e.dev.ExternalStream(e.stream("producer").Handle())
					if err != nil {
						return err
					}
					if err := producer.Record(e.event("handoff")); err != nil {
						return err
					}
					return e.stream("consumer").WaitEvent(e.event("handoff"))
				},
				func() error { return e.kernel("consumer", []devarray.Ptr{a}, []devarray.Ptr{e.buf("out")}) },
			}
		}},
	{name: "another stream's kernel is ordered before the async free by an event",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 1, bufBytes) },
				func() error { return e.stream("A").Record(e.event("filled")) },
				func() error { return e.stream("B").WaitEvent(e.event("filled")) },
				func() error { return e.kernel("B", []devarray.Ptr{p}, []devarray.Ptr{e.buf("out")}) },
				func() error { return e.stream("B").Record(e.event("read")) },
				func() error { return e.stream("A").WaitEvent(e.event("read")) },
				func() error { return e.stream("A").FreeAsync(p) },
			}
		}},
	{name: "a copy queued on the freeing stream before the async free",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 2, bufBytes) },
				func() error { return e.stream("A").CopyDtoDAsync(e.buf("b"), p, bufBytes) },
				func() error { return e.stream("A").FreeAsync(p) },
			}
		}},
	{name: "a synchronous copy reads memory before its async free",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").MemsetAsync(p, 3, bufBytes) },
				func() error { return e.dev.CopyDtoH(make([]byte, bufBytes), p) },
				func() error { return e.stream("A").FreeAsync(p) },
			}
		}},
	{name: "another stream writes memory after waiting for its async allocation",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").Record(e.event("allocated")) },
				func() error { return e.stream("B").WaitEvent(e.event("allocated")) },
				func() error { return e.stream("B").MemsetAsync(p, 4, bufBytes) },
				func() error { return e.stream("B").Record(e.event("written")) },
				func() error { return e.stream("A").WaitEvent(e.event("written")) },
				func() error { return e.stream("A").FreeAsync(p) },
			}
		}},
	{name: "a synchronous copy writes pool memory once the non-blocking stream is synchronized",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() error {
					mp, err := e.dev.NewMemPool()
					if err != nil {
						return err
					}
					e.t.Cleanup(func() { mp.Destroy() })
					p, err = e.stream("N").MallocFromPoolAsync(bufBytes, mp)
					return err
				},
				func() error { return e.stream("N").Synchronize() },
				func() error { return e.dev.CopyHtoD(p, randomBytes(bufBytes)) },
				func() error { return e.stream("N").FreeAsync(p) },
			}
		}},
	{name: "an async free waits for another stream's kernel",
		steps: func(e *raceEnv) []func() error {
			var p devarray.Ptr
			return []func() error{
				func() (err error) { p, err = e.stream("A").MallocAsync(bufBytes); return err },
				func() error { return e.stream("A").Record(e.event("allocated")) },
				func() error { return e.stream("B").WaitEvent(e.event("allocated")) },
				func() error { return e.kernel("B", []devarray.Ptr{e.buf("a")}, []devarray.Ptr{p}) },
				func() error { return e.stream("B").Record(e.event("written")) },
				func() error { return e.stream("A").WaitEvent(e.event("written")) },
				func() error { return e.stream("A").FreeAsync(p) },
			}
		}},
	{name: "the pool hands a block freed on one stream to another (follow-event-dependencies)",
		steps: func(e *raceEnv) []func() error {
			return reuseAcrossStreams(e, "A", "B", func() error {
				if err := e.stream("A").Record(e.event("freed")); err != nil {
					return err
				}
				return e.stream("B").WaitEvent(e.event("freed"))
			}, nil)
		}},
	{name: "the pool hands a block to another stream once its free has run (allow-opportunistic)",
		steps: func(e *raceEnv) []func() error {
			return reuseAcrossStreams(e, "A", "B", func() error { return e.stream("A").Synchronize() },
				[]driver.ReusePolicy{driver.ReuseFollowEventDependencies})
		}},
	{name: "the pool makes another stream wait for the free (allow-internal-dependencies)",
		steps: func(e *raceEnv) []func() error {
			return reuseAcrossStreams(e, "A", "N", func() error { return nil },
				[]driver.ReusePolicy{driver.ReuseFollowEventDependencies, driver.ReuseAllowOpportunistic})
		}},
}

// reuseAcrossStreams is a program whose second allocation, on stream to,
// gets the block the first, on stream from, used and freed: between runs
// between the free and the second allocation, and off are the reuse
// policies the pool forbids. The second allocation's life starts fresh:
// to writes and reads it as its own, and frees it.
func reuseAcrossStreams(e *raceEnv, from, to string, between func() error, off []driver.ReusePolicy) []func() error {
	var mp driver.MemPool
	var p, q devarray.Ptr
	return []func() error{
		func() (err error) {
			if mp, err = e.dev.NewMemPool(); err != nil {
				return err
			}
			e.t.Cleanup(func() { mp.Destroy() })
			for _, r := range off {
				if err := mp.SetReuse(r, false); err != nil {
					return err
				}
			}
			return mp.SetReleaseThreshold(1 << 20) // keep the block at a synchronize
		},
		func() (err error) { p, err = e.stream(from).MallocFromPoolAsync(bufBytes, mp); return err },
		func() error { return e.kernel(from, []devarray.Ptr{e.buf("a")}, []devarray.Ptr{p}) },
		func() error { return e.stream(from).CopyDtoDAsync(e.buf("b"), p, bufBytes) },
		func() error { return e.stream(from).FreeAsync(p) },
		between,
		func() (err error) { q, err = e.stream(to).MallocFromPoolAsync(bufBytes, mp); return err },
		func() error {
			require.Equal(e.t, p, q, "the pool reuses the block")
			return e.stream(to).MemsetAsync(q, 6, bufBytes)
		},
		func() error { return e.kernel(to, []devarray.Ptr{q}, []devarray.Ptr{e.buf("out")}) },
		func() error { return e.stream(to).FreeAsync(q) },
	}
}

// TestStreamRaceCorpus runs every seeded bug at no latency and at 2 ms:
// each is reported, and the report names the racing operation and the
// earlier one, with the stream of each and where each was queued.
func TestStreamRaceCorpus(t *testing.T) {
	require.GreaterOrEqual(t, len(streamBugs), 22)
	for _, latency := range []time.Duration{0, 2 * time.Millisecond} {
		for _, bug := range streamBugs {
			t.Run(fmt.Sprintf("%v/%s", latency, bug.name), func(t *testing.T) {
				e, err := runRaceProgram(t, bug, latency)
				require.ErrorIs(t, err, driver.ErrStreamRace, "the race is reported")
				var race *sim.StreamRaceError
				require.True(t, errors.As(err, &race))
				assert.Equal(t, bug.op.kind, race.Op.Kind, "the racing operation: %v", err)
				assert.Contains(t, race.Op.Stream, e.label(bug.op.stream), "the racing operation's stream: %v", err)
				assert.Equal(t, bug.prev.kind, race.Prev.Kind, "the earlier operation: %v", err)
				assert.Contains(t, race.Prev.Stream, e.label(bug.prev.stream), "the earlier operation's stream: %v", err)
				assert.Equal(t, bug.rule, race.Rule, "the stream-ordered lifetime rule: %v", err)
				if bug.rule != sim.NoLifetimeRule {
					assert.Contains(t, err.Error(), bug.rule.String())
				}
				assert.Less(t, race.Lo, race.Hi)
				assert.True(t, race.Op.Write || race.Prev.Write, "one of them writes")
				for _, o := range []sim.RaceOp{race.Op, race.Prev} {
					assert.True(t, o.Lo <= race.Lo && race.Hi <= o.Hi, "the overlap lies in each operation's range")
					require.NotEmpty(t, o.Stack, "where %s was queued", o.Kind)
					assert.Contains(t, strings.Join(o.Stack, "\n"), "streamcheck_corpus_test.go", "the program's own frame")
					assert.NotContains(t, strings.Join(o.Stack, "\n"), "device/sim.", "sim's frames are trimmed")
				}
				assert.Contains(t, err.Error(), race.Op.Stream)
				assert.Contains(t, err.Error(), race.Prev.Stream)
			})
		}
	}
}

// TestStreamRaceTwins runs the correctly ordered twins: none is reported.
func TestStreamRaceTwins(t *testing.T) {
	require.GreaterOrEqual(t, len(orderedTwins), len(streamBugs))
	for _, latency := range []time.Duration{0, 2 * time.Millisecond} {
		for _, twin := range orderedTwins {
			t.Run(fmt.Sprintf("%v/%s", latency, twin.name), func(t *testing.T) {
				_, err := runRaceProgram(t, twin, latency)
				require.NoError(t, err)
			})
		}
	}
}
