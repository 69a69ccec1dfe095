package accounting_test

import (
	"bytes"
	"encoding/json"
	"expvar"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestEventLogAndLeaks(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	_, err := l.Outstanding()
	assert.ErrorIs(t, err, accounting.ErrLogOff)
	_, _, err = l.StopLog()
	assert.ErrorIs(t, err, accounting.ErrLogOff)

	l.StartLog(accounting.LogConfig{Stacks: true})
	require.NoError(t, l.Alloc(accounting.Device, 0xa000, 256))
	require.NoError(t, l.Alloc(accounting.Pinned, 0xb000, 512))
	l.Free(accounting.Device, 0xa000, 256)
	l.RecordCopy(accounting.HtoD, accounting.PathPinned, 512, time.Microsecond)
	require.NoError(t, l.SetLimit(accounting.Device, 1))
	require.Error(t, l.Alloc(accounting.Device, 0, 2))

	out, err := l.Outstanding()
	require.NoError(t, err)
	require.Len(t, out, 1, "only the pinned allocation is still live")
	assert.Equal(t, uintptr(0xb000), out[0].Addr)
	assert.Contains(t, out[0].Stack, "TestEventLogAndLeaks", "the stack names the allocating test")

	var buf bytes.Buffer
	n, err := l.LeakReport(&buf)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Contains(t, buf.String(), "512 B pinned at 0xb000")

	events, dropped, err := l.StopLog()
	require.NoError(t, err)
	assert.Zero(t, dropped)
	ops := make([]accounting.Op, len(events))
	for i, e := range events {
		ops[i] = e.Op
	}
	assert.Equal(t, []accounting.Op{accounting.OpAlloc, accounting.OpAlloc, accounting.OpFree, accounting.OpCopy, accounting.OpFailed}, ops)
	assert.Equal(t, int64(256), events[0].Level, "device level after the allocation")
	assert.Equal(t, int64(512), events[1].Level, "pinned level after the allocation")
	assert.Equal(t, int64(0), events[2].Level, "device level after the free")
	_, err = l.Events()
	assert.ErrorIs(t, err, accounting.ErrLogOff, "stopped")
}

func TestEventLogDropsPastMax(t *testing.T) {
	var l accounting.Ledger
	l.StartLog(accounting.LogConfig{MaxEvents: 3})
	for i := range 5 {
		l.RecordCopy(accounting.DtoD, accounting.PathD2D, int64(i), 0)
	}
	events, dropped, err := l.StopLog()
	require.NoError(t, err)
	assert.Len(t, events, 3)
	assert.Equal(t, int64(2), dropped)
}

func TestTraceIsChromeTraceJSON(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	var buf bytes.Buffer
	assert.ErrorIs(t, l.Trace(&buf), accounting.ErrLogOff)

	l.StartLog(accounting.LogConfig{})
	require.NoError(t, l.Alloc(accounting.Device, 1, 1<<20))
	l.RecordCopy(accounting.HtoD, accounting.PathDirect, 1<<20, 5*time.Microsecond)
	l.RecordMemset(64, time.Microsecond)
	l.Free(accounting.Device, 1, 1<<20)
	require.NoError(t, l.SetLimit(accounting.Device, 1))
	require.Error(t, l.Alloc(accounting.Device, 2, 2))
	require.NoError(t, l.Trace(&buf))

	var tr struct {
		TraceEvents []struct {
			Name string
			Ph   string
			Ts   float64
			Dur  float64
			Tid  int
			Args map[string]any
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &tr))
	var counters, slices, instants int
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "C":
			counters++
			assert.Equal(t, "device bytes", e.Name)
		case "X":
			slices++
			assert.Greater(t, e.Dur, 0.0)
		case "i":
			instants++
		}
	}
	assert.Equal(t, 2, counters, "one counter sample per alloc and free")
	assert.Equal(t, 2, slices, "the copy and the memset")
	assert.Equal(t, 1, instants, "the failed allocation")
	assert.True(t, strings.Contains(buf.String(), `"HtoD direct 1.00 MiB"`))
}

func TestPublishExpvar(t *testing.T) {
	l := accounting.NewLedger("svc")
	require.NoError(t, l.Alloc(accounting.Host, 1, 42))
	// expvar names live as long as the process: unique per run, so that
	// -count=N runs the test N times.
	name := fmt.Sprintf("cuarray_test_%s_%d", strings.ReplaceAll(t.Name(), "/", "_"), rand.Uint64())
	require.NoError(t, l.Publish(name))
	assert.Error(t, l.Publish(name), "the name is taken: an error, not expvar's panic")

	var got struct {
		Memory map[string]accounting.KindStats
	}
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &got))
	assert.Equal(t, int64(42), got.Memory["host"].Current)
}
