package accounting_test

import (
	"bytes"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/hostile"
	"github.com/cuarray/cuarray/internal/testdev"
)

// Every exported function and method of accounting, given nil, zero,
// negative, overflowing and closed inputs, returns a typed error (zero
// values, or nothing recorded, where it returns none) and leaves the
// device's ledger at zero (testdev checks it).
func TestHostileInputs(t *testing.T) {
	dev := testdev.Open(t)
	var nilLed *accounting.Ledger
	var nilScope *accounting.Scope
	var nilWS *accounting.Workspace
	zeroWS := new(accounting.Workspace)
	noBackend := accounting.NewWorkspace(nil)
	zeroLed := new(accounting.Ledger) // ready to use
	closedDev, err := device.Open("sim:0?mem=1MiB")
	require.NoError(t, err)
	require.NoError(t, closedDev.Close())
	big := int64(math.MaxInt64)
	var buf bytes.Buffer

	cases := []hostile.Case{
		// A nil Ledger: errors from what returns them, nothing recorded, zeros.
		{"nil Ledger SetLimit", func() error { return nilLed.SetLimit(accounting.Device, 1) }, accounting.ErrNil},
		{"nil Ledger Reserve", func() error { return nilLed.Reserve(accounting.Device, 1) }, accounting.ErrNil},
		{"nil Ledger Alloc", func() error { return nilLed.Alloc(accounting.Device, 1, 1) }, accounting.ErrNil},
		{"nil Ledger JSON", func() error { return hostile.Second(nilLed.JSON()) }, accounting.ErrNil},
		{"nil Ledger StopLog", func() error { _, _, err := nilLed.StopLog(); return err }, accounting.ErrNil},
		{"nil Ledger Events", func() error { return hostile.Second(nilLed.Events()) }, accounting.ErrNil},
		{"nil Ledger Outstanding", func() error { return hostile.Second(nilLed.Outstanding()) }, accounting.ErrNil},
		{"nil Ledger LeakReport", func() error { return hostile.Second(nilLed.LeakReport(&buf)) }, accounting.ErrNil},
		{"nil Ledger Trace", func() error { return nilLed.Trace(&buf) }, accounting.ErrNil},
		{"nil Ledger Publish", func() error { return nilLed.Publish("cuarray-hostile-nil") }, accounting.ErrNil},
		{"nil Ledger SetOverhead", func() error { return nilLed.SetOverhead(2) }, accounting.ErrNil},
		{"nil Ledger Available", func() error { return hostile.Second(nilLed.Available()) }, accounting.ErrNil},
		{"nil Ledger Measure", func() error { return hostile.Second(nilLed.Measure("m", func() error { return nil })) }, accounting.ErrNil},
		{"nil Ledger Push and Pop", func() error { return hostile.Second(nilLed.Push("s").Pop()) }, accounting.ErrNil},
		{"nil Ledger recorders and getters", func() error {
			nilLed.SetMemInfo(func() (int64, int64, error) { return 0, 0, nil })
			nilLed.Cancel(accounting.Device, 1)
			nilLed.RecordFailure(accounting.Device, 1)
			nilLed.Commit(accounting.Device, 1, 1)
			nilLed.Free(accounting.Device, 1, 1)
			nilLed.AddCached(accounting.Device, 1)
			nilLed.RecordCopy(accounting.HtoD, accounting.PathDirect, 1, time.Second)
			nilLed.RecordCopyTime(accounting.HtoD, accounting.PathDirect, time.Second)
			nilLed.RecordMemset(1, time.Second)
			nilLed.StartLog(accounting.LogConfig{})
			assert.Empty(t, nilLed.Name())
			assert.Zero(t, nilLed.Limit(accounting.Device))
			assert.Zero(t, nilLed.Current(accounting.Device))
			assert.Equal(t, accounting.DefaultOverhead, nilLed.Overhead())
			assert.False(t, nilLed.WouldFit(1))
			assert.Zero(t, nilLed.Snapshot().Allocations())
			assert.NotEmpty(t, nilLed.Report())
			oom := nilLed.OutOfMemory(accounting.Device, 10, 0, false)
			assert.ErrorIs(t, oom, accounting.ErrOutOfMemory)
			assert.NotEmpty(t, oom.Error())
			return nil
		}, nil},

		// Nil and zero scopes, nil functions and writers.
		{"nil Scope Pop", func() error { return hostile.Second(nilScope.Pop()) }, accounting.ErrNil},
		{"zero Scope Pop", func() error { return hostile.Second(new(accounting.Scope).Pop()) }, accounting.ErrNil},
		{"nil Scope Name", func() error { assert.Empty(t, nilScope.Name()); return nil }, nil},
		{"Measure nil function", func() error { return hostile.Second(zeroLed.Measure("m", nil)) }, accounting.ErrNil},
		{"Trace nil writer", func() error { return zeroLed.Trace(nil) }, accounting.ErrNil},
		{"LeakReport nil writer", func() error { return hostile.Second(zeroLed.LeakReport(nil)) }, accounting.ErrNil},
		{"SetMemInfo nil, then out of memory", func() error {
			l := accounting.NewLedger("x")
			l.SetMemInfo(nil)
			require.NoError(t, l.SetLimit(accounting.Device, 10))
			return l.Reserve(accounting.Device, 11)
		}, accounting.ErrOutOfMemory},
		{"Pop twice", func() error {
			s := zeroLed.Push("s")
			_, err := s.Pop()
			require.NoError(t, err)
			return hostile.Second(s.Pop())
		}, accounting.ErrInvalidArgument},
		{"Pop out of order", func() error {
			outer := zeroLed.Push("outer")
			inner := zeroLed.Push("inner")
			defer func() { _, _ = inner.Pop(); _, _ = outer.Pop() }()
			return hostile.Second(outer.Pop())
		}, accounting.ErrInvalidArgument},
		{"Publish twice", func() error {
			l := accounting.NewLedger("x")
			name := fmt.Sprintf("cuarray-hostile-twice-%d", rand.Uint64()) // expvar names outlive a -count=N run
			if err := l.Publish(name); err != nil {
				return fmt.Errorf("the first Publish failed: %v", err) // not the error the case wants
			}
			return l.Publish(name)
		}, accounting.ErrInvalidArgument},

		// Negative, out-of-range and overflowing arguments.
		{"SetLimit negative", func() error { return zeroLed.SetLimit(accounting.Device, -1) }, accounting.ErrInvalidArgument},
		{"SetLimit unknown kind", func() error { return zeroLed.SetLimit(accounting.NumKinds, 1) }, accounting.ErrInvalidArgument},
		{"Reserve negative", func() error { return zeroLed.Reserve(accounting.Device, -1) }, accounting.ErrInvalidArgument},
		{"Reserve unknown kind", func() error { return zeroLed.Reserve(accounting.Kind(200), 1) }, accounting.ErrInvalidArgument},
		{"Alloc negative", func() error { return zeroLed.Alloc(accounting.Device, 0, -1) }, accounting.ErrInvalidArgument},
		{"SetOverhead NaN", func() error { return zeroLed.SetOverhead(math.NaN()) }, accounting.ErrInvalidArgument},
		{"SetOverhead Inf", func() error { return zeroLed.SetOverhead(math.Inf(1)) }, accounting.ErrInvalidArgument},
		{"SetOverhead below 1", func() error { return zeroLed.SetOverhead(0.5) }, accounting.ErrInvalidArgument},
		{"StopLog while off", func() error { _, _, err := zeroLed.StopLog(); return err }, accounting.ErrLogOff},
		{"Trace while off", func() error { return zeroLed.Trace(&buf) }, accounting.ErrLogOff},
		{"EstimateBytes negative", func() error { return hostile.Second(accounting.EstimateBytes([]int{-1}, devarray.Float32)) }, devarray.ErrShape},
		{"EstimateBytes overflow", func() error { return hostile.Second(accounting.EstimateBytes([]int{math.MaxInt, 2}, devarray.Float32)) }, devarray.ErrOverflow},
		{"EstimateBytes near MaxInt64", func() error { return hostile.Second(accounting.EstimateBytes([]int{math.MaxInt}, devarray.Uint8)) }, devarray.ErrOverflow},
		{"EstimateBytes invalid dtype", func() error { return hostile.Second(accounting.EstimateBytes([]int{1}, devarray.Invalid)) }, devarray.ErrDType},
		{"ParseBytes overflow", func() error { return hostile.Second(accounting.ParseBytes("9999999EiB")) }, accounting.ErrInvalidArgument},
		{"ParseBytes negative", func() error { return hostile.Second(accounting.ParseBytes("-1MiB")) }, accounting.ErrInvalidArgument},
		{"ParseKind unknown", func() error { return hostile.Second(accounting.ParseKind("")) }, accounting.ErrInvalidArgument},
		{"ParsePath unknown", func() error { return hostile.Second(accounting.ParsePath("\x00")) }, accounting.ErrInvalidArgument},
		{"bad enums and extremes", func() error {
			assert.Equal(t, int64(-1), accounting.AlignUp(-1))
			assert.Equal(t, int64(-1), accounting.AlignUp(big))
			assert.Equal(t, int64(-1), accounting.AllocBytes(big))
			assert.NotEmpty(t, accounting.Kind(200).String())
			assert.NotEmpty(t, accounting.Direction(200).String())
			assert.NotEmpty(t, accounting.Path(200).String())
			assert.NotEmpty(t, accounting.Op(200).String())
			assert.NotEmpty(t, accounting.WorkspaceScheme(-3).String())
			assert.NotEmpty(t, accounting.FormatBytes(math.MinInt64))
			assert.NotEmpty(t, accounting.FormatBytes(big))
			assert.False(t, zeroLed.WouldFit(-1))
			assert.False(t, accounting.IsSizeQuery(nil))
			var s accounting.Snapshot
			assert.Zero(t, s.CopyTotal(accounting.Direction(200)))
			assert.NotEmpty(t, s.Report())
			assert.Zero(t, accounting.Diff(s, s).Allocations())
			zeroLed.Free(accounting.Kind(200), 1, 1)
			zeroLed.RecordCopy(accounting.Direction(200), accounting.PathDirect, 1, 0)
			zeroLed.RecordCopy(accounting.HtoD, accounting.Path(200), 1, 0)
			zeroLed.RecordCopyTime(accounting.Direction(200), accounting.Path(200), 0)
			return nil
		}, nil},

		// Workspaces: nil, without a backend, bad sizes, closed device.
		{"nil Workspace StartQuery", nilWS.StartQuery, accounting.ErrNil},
		{"nil Workspace Need", func() error { return nilWS.Need(1) }, accounting.ErrNil},
		{"nil Workspace StopQuery", func() error { return hostile.Second(nilWS.StopQuery()) }, accounting.ErrNil},
		{"nil Workspace Preallocate", func() error { return hostile.Second(nilWS.Preallocate()) }, accounting.ErrNil},
		{"nil Workspace SetManual", func() error { return nilWS.SetManual(256) }, accounting.ErrNil},
		{"nil Workspace Borrow", func() error { _, _, err := nilWS.Borrow(1); return err }, accounting.ErrNil},
		{"nil Workspace BorrowRange", func() error { _, _, _, err := nilWS.BorrowRange(1, 2); return err }, accounting.ErrNil},
		{"nil Workspace Free", nilWS.Free, nil},
		{"nil Workspace getters", func() error {
			assert.Zero(t, nilWS.Size())
			assert.Zero(t, nilWS.Grows())
			assert.False(t, nilWS.Querying())
			assert.Equal(t, accounting.WorkspaceDefault, nilWS.Scheme())
			return nil
		}, nil},
		{"zero Workspace Borrow", func() error { _, _, err := zeroWS.Borrow(1); return err }, accounting.ErrNil},
		{"zero Workspace SetManual", func() error { return zeroWS.SetManual(1) }, accounting.ErrNil},
		{"zero Workspace Free", zeroWS.Free, nil},
		{"no backend Borrow", func() error { _, _, err := noBackend.Borrow(1); return err }, accounting.ErrNil},
		{"no backend Borrow 0", func() error { _, release, err := noBackend.Borrow(0); release(); return err }, nil},
		{"Borrow negative", func() error {
			_, _, err := accounting.NewWorkspace(dev).Borrow(-1)
			return err
		}, accounting.ErrInvalidArgument},
		{"Borrow MaxInt64", func() error {
			w := accounting.NewWorkspace(dev)
			_, _, err := w.Borrow(big)
			return err
		}, accounting.ErrInvalidArgument},
		{"BorrowRange want below min", func() error {
			_, _, _, err := accounting.NewWorkspace(dev).BorrowRange(10, 5)
			return err
		}, accounting.ErrInvalidArgument},
		{"Borrow more than the device", func() error {
			w := accounting.NewWorkspace(dev)
			_, _, err := w.Borrow(1 << 40)
			return err
		}, accounting.ErrOutOfMemory},
		{"SetManual negative", func() error { return accounting.NewWorkspace(dev).SetManual(-1) }, accounting.ErrInvalidArgument},
		{"SetManual MaxInt64", func() error { return accounting.NewWorkspace(dev).SetManual(big) }, accounting.ErrInvalidArgument},
		{"Need MaxInt64", func() error {
			w := accounting.NewWorkspace(dev)
			require.NoError(t, w.StartQuery())
			return w.Need(big)
		}, accounting.ErrInvalidArgument},
		{"Need outside a query", func() error { return accounting.NewWorkspace(dev).Need(1) }, accounting.ErrNotQuerying},
		{"Borrow twice", func() error {
			w := accounting.NewWorkspace(dev)
			defer w.Free()
			_, release, err := w.Borrow(256)
			require.NoError(t, err)
			defer release()
			_, _, err = w.Borrow(256)
			return err
		}, accounting.ErrWorkspaceBorrowed},
		{"Free while borrowed", func() error {
			w := accounting.NewWorkspace(dev)
			_, release, err := w.Borrow(256)
			require.NoError(t, err)
			err = w.Free()
			release()
			require.NoError(t, w.Free())
			return err
		}, accounting.ErrWorkspaceBorrowed},
		{"Borrow on a closed device", func() error {
			_, _, err := accounting.NewWorkspace(closedDev).Borrow(256)
			return err
		}, device.ErrClosed},
	}
	hostile.Run(t, cases)
}

// Concurrent hostile use of a ledger and a workspace: recording, limits,
// scopes, the log and borrows from many goroutines. Nothing panics, the
// race detector finds nothing, and the ledger balances.
func TestHostileConcurrentUse(t *testing.T) {
	dev := testdev.Open(t)
	w := accounting.NewWorkspace(dev)
	l := accounting.NewLedger("hostile")
	l.StartLog(accounting.LogConfig{MaxEvents: 100})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				addr := uintptr(g<<20 + i)
				switch g % 4 {
				case 0:
					if l.Alloc(accounting.Device, addr, 64) == nil {
						l.Free(accounting.Device, addr, 64)
					}
				case 1:
					_ = l.SetLimit(accounting.Device, int64(i%3)*1024)
					_ = l.Snapshot().Report()
				case 2:
					_, _ = l.Measure("m", func() error { l.RecordCopy(accounting.HtoD, accounting.PathPinned, 8, 1); return nil })
				case 3:
					if _, release, err := w.Borrow(int64(256 * (i%4 + 1))); err == nil {
						release()
					} else {
						assert.ErrorIs(t, err, accounting.ErrWorkspaceBorrowed)
					}
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, l.SetLimit(accounting.Device, 0))
	assert.Zero(t, l.Current(accounting.Device))
	_, _, err := l.StopLog()
	require.NoError(t, err)
	require.NoError(t, w.Free())
}
