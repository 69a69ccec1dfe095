//go:build cuda

package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The observations are rows that log what the driver does where neither
// its documentation nor a GPU run has told yet: whether a call returns
// while a host function holds a stream, what a call from inside a host
// function answers, what a copy of a partly page-locked range answers,
// what event and stream waits answer without their context current
// (observe_contexts_test.go), and, in a child process, what a stale IPC handle maps and whether a
// destroyed stream's handle kills the process (observe_child_test.go). On
// a GPU they assert nothing: they log each answer, and write the table as
// JSON to the file CUARRAY_CONFORMANCE_JSON names. On the emulated driver
// each answer must be the one in testdata/observations.json, the emulated
// driver's own (its guesses, marked as such in its code): where a GPU
// answers otherwise, the table and the emulator change together.

// observeTime is how long a call must stay unreturned to count as blocked.
const observeTime = 500 * time.Millisecond

// observation is one row: a case and what the driver did. Note, in the
// table only, says where the emulated driver's answer comes from where it
// is a guess no GPU has confirmed; the comparison ignores it.
type observation struct {
	Name string `json:"name"`
	Got  string `json:"got"`
	Note string `json:"note,omitempty"`
}

// outcome runs call on another thread with device 0's primary context
// current: its result's name when it returns within observeTime, else
// "blocked", after which release lets it go and its result follows.
func outcome(call func() int, release func()) string {
	done := onThread(ctx0, call)
	select {
	case c := <-done:
		return ErrorName(c)
	case <-time.After(observeTime):
	}
	release()
	select {
	case c := <-done:
		return "blocked, then " + ErrorName(c)
	case <-time.After(returnTime):
		return "blocked, still after the release"
	}
}

// entered waits until gate's host function runs, so that a row observes a
// stream that is held, not one about to be.
func entered(t *testing.T, g *Gate) {
	t.Helper()
	select {
	case <-g.Entered():
	case <-time.After(returnTime):
		g.Release()
		t.Fatal("the gate's host function never started")
	}
}

func TestObservations(t *testing.T) {
	bind(t)
	if observeInChild(t) {
		return
	}
	var rows []observation
	add := func(name, got string) {
		rows = append(rows, observation{Name: name, Got: got})
		t.Logf("%s: %s", name, got)
	}
	observeHeldStreams(t, add)
	observeHostFunctions(t, add)
	observeCallsWhileHeld(t, add)
	observePartlyLocked(t, add)
	observeInChildren(t, add)
	observeWithoutTheEventsContext(t, add)
	observeMore(t, add)
	ok(t, CtxSynchronize(), "cuCtxSynchronize")

	if path := os.Getenv("CUARRAY_CONFORMANCE_JSON"); path != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
	}
	if !emulatedDriver() {
		return
	}
	b, err := os.ReadFile(filepath.Join("testdata", "observations.json"))
	require.NoError(t, err)
	var want []observation
	require.NoError(t, json.Unmarshal(b, &want))
	expect := make(map[string]string, len(want))
	for _, w := range want {
		expect[w.Name] = w.Got
	}
	for _, r := range rows {
		w, known := expect[r.Name]
		if assert.True(t, known, "%s: not in testdata/observations.json (CUARRAY_CONFORMANCE_JSON writes the table)", r.Name) {
			assert.Equal(t, w, r.Got, "%s: the emulated driver's answer differs from its table", r.Name)
		}
	}
	assert.Len(t, rows, len(want), "every row of the table is observed")
}

// observeHeldStreams: copies of 4 KiB on a new non-blocking stream, from
// and to pageable and page-locked memory, while a host function holds a
// blocking, a non-blocking or the legacy stream. The page-locked copies
// are the control; on the H100 a pageable DtoHAsync so never returned.
func observeHeldStreams(t *testing.T, add func(name, got string)) {
	const n = 1 << 12
	held := []struct {
		name  string
		flags uint32
	}{{"a blocking stream", 0}, {"a non-blocking stream", StreamNonBlocking}, {"the legacy stream", 0}}
	for i, h := range held {
		for _, c := range []struct {
			name string
			call func(b *buffers, s uintptr) int
		}{
			{"pageable cuMemcpyDtoHAsync", func(b *buffers, s uintptr) int { return MemcpyDtoHAsync(b.pageable, b.d, s) }},
			{"pageable cuMemcpyHtoDAsync", func(b *buffers, s uintptr) int { return MemcpyHtoDAsync(b.d, b.pageable, s) }},
			{"page-locked cuMemcpyDtoHAsync", func(b *buffers, s uintptr) int { return MemcpyDtoHAsync(b.pinned, b.d, s) }},
			{"page-locked cuMemcpyHtoDAsync", func(b *buffers, s uintptr) int { return MemcpyHtoDAsync(b.d, b.pinned, s) }},
		} {
			b := newBuffers(t, n)
			hs := StreamLegacy
			if i < 2 {
				s, code := StreamCreate(h.flags)
				ok(t, code, "cuStreamCreate")
				hs = s
			}
			gate, code := NewGate(hs)
			ok(t, code, "cuLaunchHostFunc")
			entered(t, gate)
			fresh, code := StreamCreate(StreamNonBlocking)
			ok(t, code, "cuStreamCreate")
			add(fmt.Sprintf("%s on a new non-blocking stream while a host function holds %s", c.name, h.name),
				outcome(func() int { return c.call(b, fresh) }, gate.Release))
			gate.Release()
			ok(t, StreamSynchronize(fresh), "cuStreamSynchronize")
			ok(t, StreamDestroy(fresh), "cuStreamDestroy")
			ok(t, CtxSynchronize(), "cuCtxSynchronize")
			if hs != StreamLegacy {
				ok(t, StreamDestroy(hs), "cuStreamDestroy")
			}
		}
	}
}

// observeHostFunctions: a host function on another stream while one is
// held, and the answers of driver calls made from inside a host function.
func observeHostFunctions(t *testing.T, add func(name, got string)) {
	a, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(a)
	b, c := StreamCreate(StreamNonBlocking)
	ok(t, c, "cuStreamCreate")
	defer StreamDestroy(b)
	gate, c := NewGate(a)
	ok(t, c, "cuLaunchHostFunc")
	entered(t, gate)
	m, c := NewMarker(b)
	ok(t, c, "cuLaunchHostFunc")
	deadline := time.Now().Add(observeTime)
	for !m.Ran() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	got := "ran"
	if !m.Ran() {
		got = "waited for the held one"
	}
	add("a host function on another stream while one holds a stream", got)
	gate.Release()
	ok(t, StreamSynchronize(b), "cuStreamSynchronize")
	ok(t, StreamSynchronize(a), "cuStreamSynchronize")
	m.Free()

	in, c := CallInside(b)
	ok(t, c, "cuLaunchHostFunc")
	ok(t, StreamSynchronize(b), "cuStreamSynchronize")
	require.True(t, in.Ran(), "the host function ran")
	ctxCur, query, alloc, p := in.Results()
	in.Free()
	if p != 0 {
		ok(t, MemFree(p), "cuMemFree of what the host function allocated")
	}
	add("cuCtxGetCurrent inside a host function", ErrorName(ctxCur))
	add("cuStreamQuery inside a host function", ErrorName(query))
	add("cuMemAlloc inside a host function", ErrorName(alloc))
}

// observeCallsWhileHeld: allocation and stream calls while a host function
// holds a blocking stream. cuMemFree, documented to synchronize, is the
// control.
func observeCallsWhileHeld(t *testing.T, add func(name, got string)) {
	const n = 1 << 12
	for _, c := range []struct {
		name string
		call func(cleanup *[]func()) int
	}{
		{"cuMemAlloc", func(cl *[]func()) int {
			p, c := MemAlloc(n)
			if c == Success {
				*cl = append(*cl, func() { MemFree(p) })
			}
			return c
		}},
		{"cuMemHostAlloc", func(cl *[]func()) int {
			h, c := MemHostAlloc(n, 0)
			if c == Success {
				*cl = append(*cl, func() { MemFreeHost(h) })
			}
			return c
		}},
		{"cuMemHostRegister", func(cl *[]func()) int {
			h := CMalloc(n)
			*cl = append(*cl, func() { CFree(h) })
			c := HostRegister(h, 0)
			if c == Success {
				*cl = append(*cl, func() { HostUnregister(h) })
			}
			return c
		}},
		{"cuStreamCreate", func(cl *[]func()) int {
			s, c := StreamCreate(0)
			if c == Success {
				*cl = append(*cl, func() { StreamDestroy(s) })
			}
			return c
		}},
		{"cuEventDestroy", func(cl *[]func()) int {
			e, c := EventCreate(0)
			if c != Success {
				return c
			}
			return EventDestroy(e)
		}},
		{"cuMemFree", func(cl *[]func()) int {
			p, c := MemAlloc(n)
			if c != Success {
				return c
			}
			return MemFree(p)
		}},
	} {
		s, code := StreamCreate(0)
		ok(t, code, "cuStreamCreate")
		gate, code := NewGate(s)
		ok(t, code, "cuLaunchHostFunc")
		entered(t, gate)
		var cleanup []func()
		add(c.name+" while a host function holds a blocking stream", outcome(func() int { return c.call(&cleanup) }, gate.Release))
		gate.Release()
		ok(t, CtxSynchronize(), "cuCtxSynchronize")
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
		ok(t, StreamDestroy(s), "cuStreamDestroy")
	}
}

// observePartlyLocked: copies of host ranges partly registered. Every
// cuMemcpy page says such a range "will return CUDA_ERROR_INVALID_VALUE";
// whether two adjacent registrations count as one, and a range that shares
// a page but no byte with a registration counts as pageable, it does not
// say.
func observePartlyLocked(t *testing.T, add func(name, got string)) {
	page := os.Getpagesize()
	mem := CMalloc(8 * page)
	defer CFree(mem)
	a := unsafe.Add(mem.P, page-int(uintptr(mem.P)%uintptr(page))) // page-aligned, 6 pages and more after it
	for _, r := range []Host{{a, page}, {unsafe.Add(a, page), page}, {unsafe.Add(a, 4*page), 100}} {
		ok(t, HostRegister(r, 0), "cuMemHostRegister")
		defer HostUnregister(r)
	}
	d, c := MemAlloc(2 * page)
	ok(t, c, "cuMemAlloc")
	defer MemFree(d)
	const n = 1024
	for _, rg := range []struct {
		name string
		h    Host
	}{
		{"starting inside a registration", Host{unsafe.Add(a, page-n/2), n}},
		{"ending inside a registration", Host{unsafe.Add(a, -n/2), n}},
		{"spanning two adjacent registrations", Host{unsafe.Add(a, 2*page-n/2), n}},
		{"sharing a page but no byte with a registration", Host{unsafe.Add(a, 4*page+200), n}},
	} {
		for _, call := range []struct {
			name string
			run  func() int
		}{
			{"cuMemcpyHtoD", func() int { return MemcpyHtoD(d, rg.h) }},
			{"cuMemcpyDtoH", func() int { return MemcpyDtoH(rg.h, d) }},
			{"cuMemcpyHtoDAsync", func() int { return MemcpyHtoDAsync(d, rg.h, StreamLegacy) }},
			{"cuMemcpyDtoHAsync", func() int { return MemcpyDtoHAsync(rg.h, d, StreamLegacy) }},
			{"cuMemcpy2D to the device", func() int { return MemcpyHtoD2D(Copy2D, d, rg.h, n/2, n/2, n/2, 2, StreamLegacy) }},
		} {
			add(fmt.Sprintf("%s of a range %s", call.name, rg.name), ErrorName(call.run()))
			ok(t, CtxSynchronize(), "cuCtxSynchronize")
		}
	}
}
