package accounting_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
)

func TestScopesNest(t *testing.T) {
	var l accounting.Ledger
	require.NoError(t, l.Alloc(accounting.Device, 1, 1000)) // before any scope

	outer := l.Push("outer")
	require.NoError(t, l.Alloc(accounting.Device, 2, 300))
	inner := l.Push("inner")
	require.NoError(t, l.Alloc(accounting.Device, 3, 500))
	l.RecordCopy(accounting.HtoD, accounting.PathDirect, 64, 0)
	l.Free(accounting.Device, 3, 500)
	in, err := inner.Pop()
	require.NoError(t, err)
	l.Free(accounting.Device, 2, 300)
	out, err := outer.Pop()
	require.NoError(t, err)

	assert.Equal(t, "inner", in.Name)
	d := in.Kinds[accounting.Device]
	assert.Equal(t, int64(1300), d.Base, "the level when inner began")
	assert.Equal(t, int64(500), d.Peak, "peak above the level where inner began")
	assert.Equal(t, int64(0), d.Current, "inner freed what it allocated")
	assert.Equal(t, int64(1), d.Allocs)
	assert.Equal(t, int64(64), in.CopyTotal(accounting.HtoD).Bytes)

	o := out.Kinds[accounting.Device]
	assert.Equal(t, int64(1000), o.Base)
	assert.Equal(t, int64(800), o.Peak, "outer's peak includes inner's")
	assert.Equal(t, int64(2), o.Allocs, "inner's counts are merged into outer")
	assert.Equal(t, int64(2), o.Frees)
	assert.Equal(t, int64(64), out.CopyTotal(accounting.HtoD).Bytes)

	all := l.Snapshot().Kinds[accounting.Device]
	assert.Equal(t, int64(1800), all.Peak)
	assert.Equal(t, int64(3), all.Allocs)
}

func TestScopePopOrder(t *testing.T) {
	var l accounting.Ledger
	a := l.Push("a")
	b := l.Push("b")
	_, err := a.Pop()
	require.Error(t, err, "a is not the innermost")
	assert.Contains(t, err.Error(), `pop "b" first`)
	_, err = b.Pop()
	require.NoError(t, err)
	_, err = b.Pop()
	assert.ErrorIs(t, err, accounting.ErrInvalidArgument, "popped twice")
	_, err = a.Pop()
	assert.NoError(t, err)
	assert.Equal(t, "a", a.Name())
}

func TestMeasure(t *testing.T) {
	var l accounting.Ledger
	boom := errors.New("boom")
	snap, err := l.Measure("work", func() error {
		if err := l.Alloc(accounting.Managed, 9, 77); err != nil {
			return err
		}
		l.RecordCopy(accounting.Peer, accounting.PathPeer, 5, 0)
		l.RecordMemset(3, 0)
		return boom
	})
	assert.ErrorIs(t, err, boom, "fn's error comes back")
	assert.Equal(t, int64(77), snap.Kinds[accounting.Managed].Current)
	assert.Equal(t, int64(5), snap.CopyTotal(accounting.Peer).Bytes)
	assert.Equal(t, int64(3), snap.Memsets.Bytes)

	snap, err = l.Measure("failing alloc", func() error {
		require.NoError(t, l.SetLimit(accounting.Device, 10))
		return l.Alloc(accounting.Device, 1, 11)
	})
	assert.ErrorIs(t, err, accounting.ErrOutOfMemory)
	assert.Equal(t, int64(1), snap.Kinds[accounting.Device].Failed, "scopes count failures")
}
