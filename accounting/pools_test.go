package accounting_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// A device's stream-ordered pools' figures travel with every snapshot,
// sorted by name, into the report and the JSON, beside the ledger's own
// count of the kind.
func TestLedgerPools(t *testing.T) {
	l := accounting.NewLedger("sim:0")
	assert.Nil(t, l.Snapshot().Pools, "no pools without SetPools")
	figures := []accounting.PoolStats{
		{Name: "pool-1", Reserved: 3 << 20, ReservedHigh: 5 << 20, Used: 1 << 20, UsedHigh: 4 << 20, ReleaseThreshold: 1 << 30},
		{Name: "default", Reserved: 2 << 20, ReservedHigh: 2 << 20, Used: 2 << 20, UsedHigh: 2 << 20},
	}
	l.SetPools(func() []accounting.PoolStats { return figures })
	require.NoError(t, l.Alloc(accounting.StreamOrdered, 0x1000, 2<<20))
	s := l.Snapshot()
	require.Len(t, s.Pools, 2)
	assert.Equal(t, "default", s.Pools[0].Name, "sorted by name")
	assert.Equal(t, figures[0], s.Pools[1])
	assert.Equal(t, "pool-1", figures[0].Name, "the device's slice is left as it was")

	r := s.Report()
	assert.Contains(t, r, "stream-ordered pool")
	assert.Contains(t, r, "5.00 MiB", "the reserved high figure is in the report")
	assert.Contains(t, r, "stream-ordered", "the kind's row")

	js, err := json.Marshal(s)
	require.NoError(t, err)
	var back struct {
		Memory map[string]accounting.KindStats `json:"memory"`
		Pools  []accounting.PoolStats          `json:"pools"`
	}
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, s.Pools, back.Pools)
	assert.Equal(t, int64(2<<20), back.Memory["stream-ordered"].Current)

	d := accounting.Diff(accounting.Snapshot{}, s)
	assert.Equal(t, s.Pools, d.Pools, "a diff carries the later snapshot's pools")
	assert.Contains(t, s.GoString(), "Pools:")

	l.SetPools(nil)
	assert.Nil(t, l.Snapshot().Pools)
	l.Free(accounting.StreamOrdered, 0x1000, 2<<20)
	var nl *accounting.Ledger
	nl.SetPools(func() []accounting.PoolStats { return figures }) // a nil ledger ignores it
}
