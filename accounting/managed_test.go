package accounting_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	rand "github.com/cuarray/cuarray/internal/testrand"
)

// Managed memory's page faults, read duplicates and evictions reach the snapshot,
// its difference, the JSON and the report; nothing else counts them, and
// counts below 1 and a nil ledger record nothing.
func TestManagedCounts(t *testing.T) {
	r := rand.For(t)
	l := accounting.NewLedger("sim:0")
	assert.NotContains(t, l.Report(), "managed memory", "no line before any page event")
	before := l.Snapshot()
	faults, dups, evictions := 1+r.Int64N(1000), 1+r.Int64N(1000), 1+r.Int64N(1000)
	for _, tc := range []struct{ faults, dups, evictions int64 }{{faults, 0, 0}, {0, dups, 0}, {0, 0, evictions}, {-3, -4, -5}, {0, 0, 0}} {
		l.RecordPageFaults(tc.faults)
		l.RecordReadDuplicates(tc.dups)
		l.RecordEvictions(tc.evictions)
	}
	var nilLedger *accounting.Ledger
	nilLedger.RecordPageFaults(5)
	nilLedger.RecordReadDuplicates(5)
	nilLedger.RecordEvictions(5)
	assert.Zero(t, nilLedger.Managed())

	want := accounting.ManagedStats{Faults: faults, Duplicates: dups, Evictions: evictions}
	assert.Equal(t, want, l.Managed())
	s := l.Snapshot()
	assert.Equal(t, want, s.Managed)
	assert.Equal(t, want, accounting.Diff(before, s).Managed, "the difference from before")
	assert.Zero(t, accounting.Diff(s, l.Snapshot()).Managed, "nothing since")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var j struct {
		Managed accounting.ManagedStats `json:"managed"`
	}
	require.NoError(t, json.Unmarshal(b, &j))
	assert.Equal(t, want, j.Managed)
	assert.Contains(t, l.Report(), fmt.Sprintf("managed memory: %d page faults, %d read duplicates, %d evictions", faults, dups, evictions))
}

// Why migrations could not be counted reaches the snapshot, its
// difference, the JSON and the report; the first reason is kept, and an
// empty one or a nil ledger records nothing.
func TestMigrationsUncounted(t *testing.T) {
	l := accounting.NewLedger("cuda:0")
	l.SetMigrationsUncounted("")
	assert.Zero(t, l.Managed(), "an empty reason records nothing")
	var nilLedger *accounting.Ledger
	nilLedger.SetMigrationsUncounted("no CUPTI")
	assert.Zero(t, nilLedger.Managed())

	before := l.Snapshot()
	why := fmt.Sprintf("cupti: unavailable: libcupti.so.%d: cannot open shared object file", 11+rand.For(t).IntN(3))
	l.SetMigrationsUncounted(why)
	l.SetMigrationsUncounted("a later reason")
	want := accounting.ManagedStats{Uncounted: why}
	assert.Equal(t, want, l.Managed())
	s := l.Snapshot()
	assert.Equal(t, want, accounting.Diff(before, s).Managed, "the difference keeps the reason")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"uncounted":`)
	assert.Contains(t, l.Report(), "managed memory migrations not counted: "+why)
}
