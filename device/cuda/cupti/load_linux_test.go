//go:build cuda && linux

package cupti

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rand "github.com/cuarray/cuarray/internal/testrand"
)

func TestLayoutMatchesTheHeader(t *testing.T) {
	want := map[string]int{
		"size": RecordSize, "kind": offKind, "counterKind": offCounterKind, "value": offValue,
		"start": offStart, "end": offEnd, "address": offAddress, "srcId": offSrcID,
		"dstId": offDstID, "streamId": offStreamID, "processId": offProcessID, "flags": offFlags,
		"activityKind": int(activityKindUMCounter),
		"HtoD":         int(KindBytesHtoD), "DtoH": int(KindBytesDtoH), "CPUPageFault": int(KindCPUPageFault),
		"GPUPageFault": int(KindGPUPageFault), "thrashing": int(KindThrashing),
		"throttling": int(KindThrottling), "remoteMap": int(KindRemoteMap), "DtoD": int(KindBytesDtoD),
		"kindCount": kindCount, "cpuDevice": CPUDeviceID,
	}
	assert.Equal(t, want, cLayout(), "the parser's offsets and values are cupti_activity.h's")
}

// TestOpenWithoutLibcupti hides libcupti behind $CUARRAY_CUPTI: Open says it is unavailable,
// and why, and nothing panics.
func TestOpenWithoutLibcupti(t *testing.T) {
	r := rand.For(t)
	dir := t.TempDir()
	junk := filepath.Join(dir, "libcupti-junk.so")
	garbage := make([]byte, 64+r.IntN(4096))
	for i := range garbage {
		garbage[i] = byte(r.Uint32())
	}
	require.NoError(t, os.WriteFile(junk, garbage, 0o644))
	missing := filepath.Join(dir, fmt.Sprintf("libcupti-%d.so", r.Uint32()))
	cases := []struct {
		name, path, why string
	}{
		{"missing file", missing, missing},
		{"not a library", junk, junk},
		{"a library without CUPTI's functions", "libm.so.6", "cuptiActivityEnable"},
		{"turned off", "", "CUARRAY_CUPTI is set and empty: CUPTI is turned off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvLibrary, tc.path)
			var lib *Library
			var err error
			require.NotPanics(t, func() { lib, err = Open() })
			require.ErrorIs(t, err, ErrUnavailable)
			assert.Nil(t, lib)
			assert.Contains(t, err.Error(), tc.why, "the error says why")
			t.Log(err)
		})
	}
}

// TestOpenAndStartHere loads this machine's libcupti where it has one. Without a GPU, Start
// fails with CUPTI's typed error, which says so and matches ErrUnavailable; with one, a
// counter that saw no managed memory counts nothing.
func TestOpenAndStartHere(t *testing.T) {
	lib, err := Open()
	if err != nil {
		require.ErrorIs(t, err, ErrUnavailable)
		assert.Contains(t, err.Error(), "load libcupti: ")
		t.Skipf("no libcupti on this machine, so Start cannot be tried: %v", err)
	}
	assert.NotEmpty(t, lib.Path())
	again, err := Open()
	require.NoError(t, err, "a second Open takes the library already loaded")
	assert.NotNil(t, again)

	c, err := lib.Start()
	if err != nil {
		var cerr *Error
		require.ErrorAs(t, err, &cerr, "CUPTI's refusal is an *Error")
		assert.NotEqual(t, "CUptiResult", cerr.Name, "cuptiGetResultString named it")
		require.ErrorIs(t, err, ErrUnavailable, "and says the counters are unavailable: %v", err)
		t.Logf("Start on this machine: %v", err)
		_, err = lib.Start()
		require.Error(t, err, "a failed Start can be tried again and fails the same way")
		return
	}
	tot, err := c.Stop()
	require.NoError(t, err)
	assert.Zero(t, tot.Migrated(), "no managed memory, no migration: %v", tot)
}
