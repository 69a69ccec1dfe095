package accounting_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

// FuzzReadLog: any input is read or refused with ErrBadLog, never a
// panic; a log that reads is consistent (ids pair frees with allocations
// of the same size and kind, scopes and streams are in range, time never
// goes back) and WriteTo writes it back to bytes that read the same.
func FuzzReadLog(f *testing.F) {
	l := accounting.NewLedger("sim:0")
	var seed bytes.Buffer
	rec, err := l.Record(&seed)
	require.NoError(f, err)
	s := l.Push("seed")
	_ = l.Alloc(accounting.Device, 0x1000, 4096)
	l.NoteSegment(accounting.Device, 0x1000)
	l.NoteBlockAlloc(accounting.Device, 0x1000, 100, 7)
	_ = l.Alloc(accounting.Pinned, 0x2000, 300)
	l.NoteBlockFree(accounting.Device, 0x1000, 256, 7)
	l.Free(accounting.Device, 0x1000, 4096)
	l.Free(accounting.Device, 0x5000, 512)
	_ = l.SetLimit(accounting.Device, 1)
	_ = l.Alloc(accounting.Device, 0x3000, 4096)
	_, _ = s.Pop()
	require.NoError(f, rec.Close())
	f.Add(seed.Bytes())
	f.Add([]byte("CUALLOG\x01\x00\x00"))
	f.Add([]byte("CUALLOG\x01\x05sim:0\x02\x01\x00\x80\x02\x00\x02\x00\x01\x00"))

	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := accounting.ReadLog(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, accounting.ErrBadLog)
			require.Nil(t, g)
			return
		}
		allocs := make(map[int]accounting.LogEvent)
		freed := make(map[int]bool)
		for i, e := range g.Events {
			require.GreaterOrEqual(t, e.Bytes, int64(0))
			require.LessOrEqual(t, e.Scope, len(g.Scopes))
			require.LessOrEqual(t, e.Stream, g.Streams)
			if i > 0 {
				require.GreaterOrEqual(t, e.At, g.Events[i-1].At)
			}
			switch e.Op {
			case accounting.OpAlloc:
				require.Equal(t, len(allocs)+1, e.ID)
				allocs[e.ID] = e
			case accounting.OpFree:
				if e.ID == 0 {
					continue
				}
				a, ok := allocs[e.ID]
				require.True(t, ok, "a free pairs with an earlier allocation")
				require.False(t, freed[e.ID])
				freed[e.ID] = true
				require.Equal(t, a.Bytes, e.Bytes)
				require.Equal(t, a.Kind, e.Kind)
			case accounting.OpFailed:
				require.Zero(t, e.ID)
			default:
				t.Fatalf("op %v", e.Op)
			}
		}
		for i, sc := range g.Scopes {
			require.LessOrEqual(t, sc.Parent, i)
			_ = g.ScopeName(i + 1)
		}
		_ = g.Peak(accounting.Device)
		var out bytes.Buffer
		_, err = g.WriteTo(&out)
		require.NoError(t, err)
		g2, err := accounting.ReadLog(&out)
		require.NoError(t, err)
		require.Equal(t, g.Events, g2.Events)
		require.Equal(t, g.Scopes, g2.Scopes)
		require.Equal(t, g.Name, g2.Name)
	})
}
