package cupti

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rand "github.com/cuarray/cuarray/internal/testrand"
)

// fakeCUPTI is a backend whose deliveries and failures a test sets: each flush hands over
// the next batch of bytes.
type fakeCUPTI struct {
	mu        sync.Mutex
	refuse    map[int]error // start's error, by the number of kinds asked for
	starts    [][]CounterKind
	batches   [][]byte
	other     int64
	dropped   int64
	flushErr  error
	stopErr   error
	stopCalls int
}

func (f *fakeCUPTI) start(kinds []CounterKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, kinds)
	return f.refuse[len(kinds)]
}

func (f *fakeCUPTI) flush() ([]byte, int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.flushErr != nil {
		return nil, 0, 0, f.flushErr
	}
	var b []byte
	if len(f.batches) > 0 {
		b, f.batches = f.batches[0], f.batches[1:]
	}
	other, dropped := f.other, f.dropped
	f.other, f.dropped = 0, 0
	return b, other, dropped, nil
}

func (f *fakeCUPTI) stop() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopCalls++
	return f.stopErr
}

// batch encodes records of random kinds and values, and the totals they make.
func batch(r *rand.Rand, n int) ([]byte, Totals) {
	var b []byte
	var tot Totals
	for range n {
		rec := randomRecord(r, AllKinds[r.IntN(len(AllKinds))])
		b = append(b, encode(rec, activityKindUMCounter, r.Uint32())...)
		if err := tot.Add(rec); err != nil {
			panic(err)
		}
	}
	return b, tot
}

func TestCounterSumsEveryFlush(t *testing.T) {
	r := rand.For(t)
	b1, t1 := batch(r, 1+r.IntN(50))
	b2, t2 := batch(r, 1+r.IntN(50))
	b3, t3 := batch(r, 1+r.IntN(50))
	fake := &fakeCUPTI{batches: [][]byte{b1, b2, b3}, other: 3, dropped: 2}
	c, err := (&Library{be: fake}).Start()
	require.NoError(t, err)
	assert.Equal(t, AllKinds, c.Kinds(), "every kind where CUPTI takes them all")

	got, err := c.Flush()
	require.NoError(t, err)
	want := t1
	want.OtherRecords, want.Dropped = 3, 2
	assert.Equal(t, want, got, "the first flush's records")

	got, err = c.Stop()
	require.NoError(t, err)
	addTotals(&want, t2)
	addTotals(&want, t3)
	want.Records = t1.Records + t2.Records + t3.Records
	assert.Equal(t, want, got, "Stop takes what was delivered before and after the disable")
	assert.Equal(t, 1, fake.stopCalls)
	assert.Len(t, c.Records(), int(want.Records))

	again, err := c.Stop()
	require.NoError(t, err, "a second Stop")
	assert.Equal(t, got, again, "a second Stop returns the same totals")
	assert.Equal(t, 1, fake.stopCalls, "and disables nothing again")
	_, err = c.Flush()
	require.ErrorIs(t, err, ErrStopped)
}

func TestCounterKeepsTheFirstRecords(t *testing.T) {
	r := rand.For(t)
	b1, _ := batch(r, KeptRecords-1-r.IntN(10))
	b2, _ := batch(r, 20+r.IntN(10))
	want, err := ParseRecords(append(append([]byte{}, b1...), b2...))
	require.NoError(t, err)
	c, err := (&Library{be: &fakeCUPTI{batches: [][]byte{b1, b2}}}).Start()
	require.NoError(t, err)
	tot, err := c.Stop()
	require.NoError(t, err)
	assert.Equal(t, int64(len(want)), tot.Records, "every record counted")
	assert.Equal(t, want[:KeptRecords], c.Records(), "the first KeptRecords kept, in order")
}

func TestCounterOneAtATime(t *testing.T) {
	lib := &Library{be: &fakeCUPTI{}}
	c, err := lib.Start()
	require.NoError(t, err)
	_, err = lib.Start()
	require.ErrorIs(t, err, ErrBusy, "CUPTI's buffers are one per process")
	_, err = c.Stop()
	require.NoError(t, err)
	c2, err := lib.Start()
	require.NoError(t, err, "another starts once the first stopped")
	_, err = c2.Stop()
	require.NoError(t, err)
}

func TestCounterStartFallsBackToTheByteCounters(t *testing.T) {
	refused := &Error{Op: "cuptiActivityConfigureUnifiedMemoryCounter", Result: ResultUMProfilingNotSupportedOnDevice, Name: "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE"}
	noGPU := &Error{Op: "cuptiActivityConfigureUnifiedMemoryCounter", Result: ResultNotInitialized, Name: "CUPTI_ERROR_NOT_INITIALIZED"}
	cases := []struct {
		name      string
		refuse    map[int]error
		wantKinds []CounterKind
		wantErr   error
		starts    int
	}{
		{"all taken", nil, AllKinds, nil, 1},
		{"some refused", map[int]error{len(AllKinds): refused}, BasicKinds, nil, 2},
		{"all refused", map[int]error{len(AllKinds): refused, len(BasicKinds): refused}, nil, refused, 2},
		{"no GPU: no second try", map[int]error{len(AllKinds): noGPU}, nil, noGPU, 1},
		{"not CUPTI's error", map[int]error{len(AllKinds): errors.New("broken")}, nil, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := &fakeCUPTI{refuse: tc.refuse}
			c, err := (&Library{be: fake}).Start()
			assert.Len(t, fake.starts, tc.starts)
			if tc.wantKinds == nil {
				require.Error(t, err)
				assert.Nil(t, c)
				if tc.wantErr != nil {
					assert.Equal(t, tc.wantErr, err)
				}
				c2, err := (&Library{be: &fakeCUPTI{}}).Start()
				require.NoError(t, err, "a failed Start leaves no counter running")
				_, err = c2.Stop()
				require.NoError(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantKinds, c.Kinds())
			_, err = c.Stop()
			require.NoError(t, err)
		})
	}
}

func TestCounterFailures(t *testing.T) {
	r := rand.For(t)
	good, goodTotals := batch(r, 1+r.IntN(20))
	bad := encode(randomRecord(r, KindBytesHtoD), 1+uint32(r.IntN(24)), r.Uint32())
	flushErr := &Error{Op: "cuptiActivityFlushAll", Result: ResultUnknown, Name: "CUPTI_ERROR_UNKNOWN"}
	stopErr := &Error{Op: "cuptiActivityDisable", Result: ResultNotInitialized, Name: "CUPTI_ERROR_NOT_INITIALIZED"}
	cases := []struct {
		name    string
		fake    *fakeCUPTI
		flush   error // Flush's error
		stop    error // Stop's
		totals  Totals
		stopped int
	}{
		{"bad record", &fakeCUPTI{batches: [][]byte{append(append([]byte{}, good...), bad...)}}, ErrBadRecord, nil, Totals{}, 1},
		{"flush fails", &fakeCUPTI{flushErr: flushErr}, flushErr, flushErr, Totals{}, 1},
		{"disable fails", &fakeCUPTI{batches: [][]byte{nil, good}, stopErr: stopErr}, nil, stopErr, goodTotals, 1},
		{"good then bad", &fakeCUPTI{batches: [][]byte{good, bad}}, nil, ErrBadRecord, goodTotals, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := (&Library{be: tc.fake}).Start()
			require.NoError(t, err)
			_, err = c.Flush()
			if tc.flush != nil {
				require.ErrorIs(t, err, tc.flush)
			} else {
				require.NoError(t, err)
			}
			got, err := c.Stop()
			if tc.stop != nil {
				require.ErrorIs(t, err, tc.stop)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.totals, got, "what was delivered before the failure, and none of a batch with a bad record")
			assert.Equal(t, tc.stopped, tc.fake.stopCalls, "Stop disables the counters even after a failed flush")
			c2, err := (&Library{be: &fakeCUPTI{}}).Start()
			require.NoError(t, err, "a failed Stop still lets another counter start")
			_, err = c2.Stop()
			require.NoError(t, err)
		})
	}
}

func TestErrorSaysWhyAndMatchesUnavailable(t *testing.T) {
	cases := []struct {
		result      Result
		unavailable bool
		why         string
	}{
		{ResultNotInitialized, true, "no CUDA driver or no GPU answered"},
		{ResultUMProfilingNotSupported, true, "not supported on this platform"},
		{ResultUMProfilingNotSupportedOnDevice, true, "the device does not support"},
		{ResultUMProfilingNotSupportedNonP2P, true, "peer access"},
		{ResultUMProfilingNotSupportedWithMPS, true, "MPS"},
		{ResultMultipleSubscribersNotSupported, true, "another profiler"},
		{ResultInsufficientPrivileges, true, "privileges"},
		{ResultNotSupported, true, "does not support"},
		{ResultInvalidParameter, false, ""},
		{ResultUnknown, false, ""},
	}
	for _, tc := range cases {
		e := &Error{Op: "cuptiActivityEnable", Result: tc.result, Name: "CUPTI_ERROR_X"}
		assert.Equal(t, tc.unavailable, errors.Is(e, ErrUnavailable), "result %d", tc.result)
		assert.Contains(t, e.Error(), "cuptiActivityEnable: CUPTI_ERROR_X")
		if tc.why != "" {
			assert.Contains(t, e.Error(), tc.why)
		}
	}
	u := unavailable("load libcupti: %s", "gone")
	assert.ErrorIs(t, u, ErrUnavailable)
	assert.Equal(t, "cupti: unified-memory counters unavailable: load libcupti: gone", u.Error())
}
