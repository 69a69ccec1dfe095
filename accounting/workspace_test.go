package accounting_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/testdev"
)

func TestWorkspaceDefaultGrows(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	w := accounting.NewWorkspace(dev)
	defer func() { require.NoError(t, w.Free()) }()
	assert.Equal(t, accounting.WorkspaceDefault, w.Scheme())
	assert.Zero(t, led.Current(accounting.Device), "nothing before the first borrow")

	for _, tc := range []struct {
		need, size int64
		grows      int
	}{
		{1000, 1024, 1}, {500, 1024, 1}, {1024, 1024, 1}, {5000, 5120, 2}, {1, 5120, 2},
	} {
		p, release, err := w.Borrow(tc.need)
		require.NoError(t, err, "borrow %d", tc.need)
		assert.NotZero(t, p)
		// The memory is real device memory: write and read it back.
		data := testdev.RandomBytes(int(tc.need))
		require.NoError(t, dev.CopyHtoD(p, data))
		back := make([]byte, len(data))
		for i := range back {
			back[i] = ^data[i] // a copy back that wrote nothing shows, even for 1 byte drawn as 0
		}
		require.NoError(t, dev.CopyDtoH(back, p))
		assert.Equal(t, data, back)
		release()
		release() // harmless
		assert.Equal(t, tc.size, w.Size(), "after borrowing %d", tc.need)
		assert.Equal(t, tc.size, led.Current(accounting.Device), "the ledger counts the workspace")
		assert.Equal(t, tc.grows, w.Grows())
	}
}

func TestWorkspaceOneBorrowAtATime(t *testing.T) {
	dev := testdev.Open(t)
	w := accounting.NewWorkspace(dev)
	defer func() { require.NoError(t, w.Free()) }()
	_, release, err := w.Borrow(4096)
	require.NoError(t, err)
	_, _, err = w.Borrow(16)
	assert.ErrorIs(t, err, accounting.ErrWorkspaceBorrowed)
	assert.ErrorIs(t, w.Free(), accounting.ErrWorkspaceBorrowed, "no freeing under a borrower")
	assert.ErrorIs(t, w.SetManual(1<<20), accounting.ErrWorkspaceBorrowed)
	assert.ErrorIs(t, w.StartQuery(), accounting.ErrWorkspaceBorrowed)
	release()
	_, release, err = w.Borrow(16)
	require.NoError(t, err, "free again after release")
	release()
}

func TestWorkspaceQueryAndPreallocate(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	w := accounting.NewWorkspace(dev)
	defer func() { require.NoError(t, w.Free()) }()

	assert.ErrorIs(t, w.Need(10), accounting.ErrNotQuerying)
	_, err := w.StopQuery()
	assert.ErrorIs(t, err, accounting.ErrNotQuerying)

	require.NoError(t, w.StartQuery())
	assert.True(t, w.Querying())
	for _, tc := range []struct {
		need int64
		want error
	}{
		{3000, accounting.SizeIncreased}, {2000, accounting.SizeUnchanged},
		{3072, accounting.SizeUnchanged}, // 3000 was rounded up to 3072 already
		{3073, accounting.SizeIncreased}, {0, accounting.SizeUnchanged},
	} {
		err := w.Need(tc.need)
		assert.Same(t, tc.want, err, "need %d", tc.need)
		assert.True(t, accounting.IsSizeQuery(err))
	}
	assert.False(t, accounting.IsSizeQuery(errors.New("other")))
	_, _, err = w.Borrow(10)
	assert.ErrorIs(t, err, accounting.ErrInvalidArgument, "calls do not run in query mode")
	assert.Zero(t, led.Current(accounting.Device), "a query allocates nothing")

	size, err := w.Preallocate()
	require.NoError(t, err)
	assert.Equal(t, int64(3328), size)
	assert.Equal(t, accounting.WorkspacePreallocated, w.Scheme())
	assert.Equal(t, int64(3328), led.Current(accounting.Device))

	_, release, err := w.Borrow(3300)
	require.NoError(t, err)
	release()
	_, _, err = w.Borrow(3329)
	assert.ErrorIs(t, err, accounting.ErrWorkspaceTooSmall, "preallocated never grows")
	assert.ErrorContains(t, err, "preallocated workspace holds 3.25 KiB")
	assert.Equal(t, int64(3328), w.Size())
	assert.Zero(t, w.Grows())
}

func TestWorkspaceManual(t *testing.T) {
	dev := testdev.Open(t)
	led := dev.Ledger()
	w := accounting.NewWorkspace(dev)
	require.NoError(t, w.SetManual(10_000))
	assert.Equal(t, accounting.WorkspaceManual, w.Scheme())
	assert.Equal(t, int64(10_240), led.Current(accounting.Device))
	_, release, err := w.Borrow(10_240)
	require.NoError(t, err)
	release()
	_, _, err = w.Borrow(10_241)
	assert.ErrorIs(t, err, accounting.ErrWorkspaceTooSmall)
	assert.ErrorContains(t, err, "manual workspace")
	assert.ErrorIs(t, w.SetManual(-1), accounting.ErrInvalidArgument)

	require.NoError(t, w.SetManual(0), "0 frees it and returns to the default scheme")
	assert.Equal(t, accounting.WorkspaceDefault, w.Scheme())
	assert.Zero(t, led.Current(accounting.Device))
	_, release, err = w.Borrow(20_000)
	require.NoError(t, err, "the default scheme grows again")
	release()
	require.NoError(t, w.Free())
	assert.Zero(t, led.Current(accounting.Device))
}

func TestWorkspaceBorrowRange(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(w *accounting.Workspace) error
		min, want int64
		got       int64
		err       error
		refused   int64 // allocations the device refused: each size is asked for once
	}{
		{"default grows to the faster size", func(*accounting.Workspace) error { return nil }, 1 << 20, 4 << 20, 4 << 20, nil, 0},
		{"default falls back when the device is full", func(*accounting.Workspace) error { return nil }, 1 << 20, 40 << 20, 1 << 20, nil, 1},
		{"manual between the two sizes lends the smaller", func(w *accounting.Workspace) error { return w.SetManual(2 << 20) }, 1 << 20, 4 << 20, 2 << 20, nil, 0},
		{"manual above both lends the faster size", func(w *accounting.Workspace) error { return w.SetManual(8 << 20) }, 1 << 20, 4 << 20, 4 << 20, nil, 0},
		{"manual at exactly the minimum lends it", func(w *accounting.Workspace) error { return w.SetManual(1 << 20) }, 1 << 20, 4 << 20, 1 << 20, nil, 0},
		{"manual below both fails", func(w *accounting.Workspace) error { return w.SetManual(512 << 10) }, 1 << 20, 4 << 20, 0, accounting.ErrWorkspaceTooSmall, 0},
		{"default with no room for either", func(*accounting.Workspace) error { return nil }, 40 << 20, 80 << 20, 0, accounting.ErrOutOfMemory, 2},
		{"default with no room for the one size asked", func(*accounting.Workspace) error { return nil }, 40 << 20, 40 << 20, 0, accounting.ErrOutOfMemory, 1},
		{"bad range", func(*accounting.Workspace) error { return nil }, 4 << 20, 1 << 20, 0, accounting.ErrInvalidArgument, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev, err := device.Open("sim:0?mem=32MiB")
			require.NoError(t, err)
			defer dev.Close()
			w := accounting.NewWorkspace(dev)
			require.NoError(t, tc.setup(w))
			p, got, release, err := w.BorrowRange(tc.min, tc.want)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
			} else {
				require.NoError(t, err)
				assert.NotZero(t, p)
				assert.Equal(t, tc.got, got)
				release()
			}
			assert.Equal(t, tc.refused, dev.Ledger().Snapshot().Kinds[accounting.Device].Failed, "device refusals")
			require.NoError(t, w.Free())
			assert.Zero(t, dev.Ledger().Current(accounting.Device), "a failure leaves nothing allocated")
		})
	}
}
