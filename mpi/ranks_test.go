//go:build mpi

package mpi

import (
	"errors"
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/mpijob"
	"github.com/cuarray/cuarray/transfer"
)

// rankEnv marks a test binary that mpirun started as one rank: its tests
// named TestRank run with MPI initialized.
const rankEnv = "CUARRAY_MPI_TEST_RANK"

func TestMain(m *testing.M) {
	if os.Getenv(rankEnv) == "" {
		os.Exit(m.Run())
	}
	if err := Init(); err != nil {
		fmt.Fprintln(os.Stderr, "mpi test rank:", err)
		os.Exit(1)
	}
	code := m.Run()
	// every rank exits with the worst code, so that mpirun reports a failure on any rank
	world, err := World()
	if err == nil {
		var worst []int64
		if worst, err = world.AllreduceInt64([]int64{int64(code)}, true); err == nil {
			code = int(worst[0])
		}
	}
	if err != nil || Finalize() != nil {
		code = max(code, 1)
	}
	os.Exit(code)
}

// mpirun returns the mpirun command that runs this test binary as np
// ranks on the tests named by run, with a session directory of its own, or
// skips the test when mpirun is absent.
func mpirun(t *testing.T, np int, run string) *exec.Cmd {
	t.Helper()
	cmd := mpijob.Command(t, np, os.Args[0], "-test.run", run, "-test.count=1", "-test.v")
	cmd.Env = append(cmd.Env, rankEnv+"=1")
	return cmd
}

// runFor runs cmd and returns its output; past limit it kills mpirun
// (which ends its ranks) and fails.
func runFor(cmd *exec.Cmd, limit time.Duration) ([]byte, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return []byte(out.String()), err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return []byte(out.String()), fmt.Errorf("mpirun ran past %v", limit)
	}
}

// TestUnderMPIRun runs the TestRank tests as every rank of jobs of 1 to 4
// processes.
func TestUnderMPIRun(t *testing.T) {
	if os.Getenv(rankEnv) != "" {
		t.Skip("this is a rank: TestUnderMPIRun starts the ranks")
	}
	for _, np := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			cmd := mpirun(t, np, "^TestRank")
			start := time.Now()
			out, err := runFor(cmd, 2*time.Minute)
			require.NoError(t, err, "the ranks' tests failed:\n%s", out)
			assert.Equal(t, np, strings.Count(string(out), "--- PASS: TestRankAlltoallv ("), "every rank passed:\n%s", out)
			t.Logf("%d ranks in %v", np, time.Since(start).Round(time.Millisecond))
		})
	}
}

// rankSetup skips outside mpirun and returns the world and a sim device.
func rankSetup(t *testing.T) (Comm, driver.Device) {
	t.Helper()
	if os.Getenv(rankEnv) == "" {
		t.Skip("runs as a rank under mpirun: TestUnderMPIRun starts it")
	}
	world, err := World()
	require.NoError(t, err)
	dev, err := device.Open("sim:0")
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.Zero(t, dev.Ledger().Current(accounting.Device), "device memory left allocated")
		dev.Close()
	})
	return world, dev
}

// upload makes a device array of values.
func upload(t *testing.T, dev driver.Device, values []float32, shape ...int) *devarray.DevArray {
	t.Helper()
	a, err := devarray.Empty(dev, devarray.Float32, shape...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	require.NoError(t, transfer.Copy(transfer.Dev(a), transfer.Host(values, shape...)))
	return a
}

func download(t *testing.T, a *devarray.DevArray) []float32 {
	t.Helper()
	out := make([]float32, a.Size())
	require.NoError(t, transfer.Copy(transfer.Host(out, a.Shape()...), transfer.Dev(a)))
	return out
}

// seeded returns values every rank can compute for rank r's message.
func seeded(r, n int, salt uint64) []float32 {
	g := rand.New(rand.NewPCG(uint64(r)+1, salt))
	v := make([]float32, n)
	for i := range v {
		v[i] = g.Float32()*2 - 1
	}
	return v
}

func TestRankSendRecvRing(t *testing.T) {
	world, dev := rankSetup(t)
	if world.Size() < 2 {
		t.Skip("a ring needs two ranks: a blocking send to itself would wait for a receive that never comes")
	}
	salt := rand.Uint64()
	salts, err := world.AllreduceInt64([]int64{int64(salt >> 1)}, true) // one salt for the job, fresh each run
	require.NoError(t, err)
	salt = uint64(salts[0])
	tr, err := NewTransport(world, dev)
	require.NoError(t, err)
	defer tr.Close()
	assert.Equal(t, accounting.PathMPIStaged, tr.Path(), "sim goes through page-locked buffers")
	r, n := world.Rank(), world.Size()
	right, left := (r+1)%n, (r+n-1)%n
	tests := []struct {
		name    string
		strided bool
	}{{"contiguous", false}, {"strided view sent and received", true}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const rows, cols = 24, 40
			mine := upload(t, dev, seeded(r, rows*cols, salt+uint64(i)), rows, cols)
			recv, err := devarray.Empty(dev, devarray.Float32, rows, cols)
			require.NoError(t, err)
			defer recv.Free()
			send, into := mine, recv
			if tt.strided {
				send, err = mine.Permute(1, 0) // columns first: a strided view, packed on the device
				require.NoError(t, err)
				into, err = recv.Permute(1, 0)
				require.NoError(t, err)
			}
			before := dev.Ledger().Snapshot()
			if r%2 == 0 { // even ranks send first: no rank waits on a send that waits on it
				require.NoError(t, tr.Send(send, right, 7))
				require.NoError(t, tr.Recv(into, left, 7))
			} else {
				require.NoError(t, tr.Recv(into, left, 7))
				require.NoError(t, tr.Send(send, right, 7))
			}
			d := accounting.Diff(before, dev.Ledger().Snapshot())
			net := d.Copies[accounting.Net][accounting.PathMPIStaged]
			assert.Equal(t, int64(2), net.Count, "one send and one receive, each recorded on mpi-staged")
			assert.Equal(t, int64(2*rows*cols*4), net.Bytes, "the bytes sent to and received from other ranks")
			assert.Equal(t, int64(rows*cols*4), d.Copies[accounting.DtoH][accounting.PathPinned].Bytes, "the send staged out once")
			assert.Equal(t, int64(rows*cols*4), d.Copies[accounting.HtoD][accounting.PathPinned].Bytes, "the receive staged in once")
			assert.Equal(t, seeded(left, rows*cols, salt+uint64(i)), download(t, recv), "rank %d's values arrived", left)
		})
	}
}

func TestRankAlltoallv(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	// counts[p][q]: what rank p sends rank q, the same table on every rank
	seed := sharedSeed(t, world)
	g := rand.New(rand.NewPCG(seed, 3))
	counts := make([][]int64, n)
	for p := range counts {
		counts[p] = make([]int64, n)
		for q := range counts[p] {
			counts[p][q] = 1 + g.Int64N(300)
		}
	}
	for _, chunk := range []int64{DefaultChunkBytes, 64, 1000} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			require.NoError(t, SetChunkBytes(chunk))
			defer SetChunkBytes(DefaultChunkBytes)
			tr, err := NewTransport(world, dev)
			require.NoError(t, err)
			defer tr.Close()
			send := make([]int64, n)
			recv := make([]int64, n)
			var sendTotal, recvTotal int64
			for q := range n {
				send[q], recv[q] = counts[r][q], counts[q][r]
				sendTotal += send[q]
				recvTotal += recv[q]
			}
			values := seeded(r, int(sendTotal), seed+uint64(chunk))
			src := upload(t, dev, values, int(sendTotal))
			dst, err := devarray.Empty(dev, devarray.Float32, int(recvTotal))
			require.NoError(t, err)
			defer dst.Free()
			before := dev.Ledger().Snapshot()
			require.NoError(t, tr.Alltoallv(src, send, dst, recv))
			d := accounting.Diff(before, dev.Ledger().Snapshot())
			moved := (sendTotal + recvTotal - send[r] - recv[r]) * 4
			assert.Equal(t, accounting.CopyStats{Count: 1, Bytes: moved, Seconds: d.Copies[accounting.Net][accounting.PathMPIStaged].Seconds},
				d.Copies[accounting.Net][accounting.PathMPIStaged], "one call, the bytes to and from the other ranks")
			got := download(t, dst)
			var at int64
			for q := range n {
				// rank q's block for r: its values after its blocks for the ranks before r
				var off int64
				for k := range r {
					off += counts[q][k]
				}
				theirs := seeded(q, int(sumOf(counts[q])), seed+uint64(chunk))
				assert.Equal(t, theirs[off:off+counts[q][r]], got[at:at+counts[q][r]], "the block from rank %d", q)
				at += counts[q][r]
			}
		})
	}
	tr, err := NewTransport(world, dev)
	require.NoError(t, err)
	defer tr.Close()
	a := upload(t, dev, seeded(r, 8, 1), 8)
	bad := make([]int64, n)
	bad[0] = 9
	assert.ErrorIs(t, tr.Alltoallv(a, bad, a, make([]int64, n)), ErrInvalidSpan, "more to send than the array holds")
	assert.ErrorIs(t, tr.Alltoallv(a, make([]int64, n+1), a, make([]int64, n)), ErrInvalidSpan, "a count per rank")
}

func sumOf(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

func TestRankDatatypesPast2GiB(t *testing.T) {
	rankSetup(t)
	tests := []struct {
		name  string
		span  Span
		chunk int64
	}{
		{"2^31 float32 in 1 GiB chunks", Span{0, 4 << 31}, DefaultChunkBytes},
		{"2^31+7 float32 at 12 GiB", Span{12 << 30, 4*(1<<31) + 28}, DefaultChunkBytes},
		{"3 GiB and a byte in 2^31-1 byte chunks", Span{1, 3<<30 + 1}, MaxCount},
		{"small, in 64-byte chunks", Span{100, 1000}, 64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, lb, extent, err := typeInfo(tt.span, tt.chunk)
			require.NoError(t, err)
			assert.Equal(t, tt.span.Len, size, "MPI's size of the type is the span's bytes")
			assert.Equal(t, tt.span.Off, lb, "the type starts at the span's offset")
			assert.Equal(t, tt.span.Len, extent, "and covers it without gaps")
		})
	}
}

func TestRankCollectivesAndFile(t *testing.T) {
	world, _ := rankSetup(t)
	r, n := world.Rank(), world.Size()
	sum, err := world.AllreduceInt64([]int64{int64(r), 1}, false)
	require.NoError(t, err)
	assert.Equal(t, []int64{int64(n * (n - 1) / 2), int64(n)}, sum)
	mine := []byte(strings.Repeat(fmt.Sprint(r), r+1))
	all, err := world.Gather(mine, 0)
	require.NoError(t, err)
	if r == 0 {
		require.Len(t, all, n)
		for q, b := range all {
			assert.Equal(t, strings.Repeat(fmt.Sprint(q), q+1), string(b))
		}
	} else {
		assert.Nil(t, all)
	}
	dir := make([]byte, 256)
	if r == 0 {
		copy(dir, t.TempDir())
	}
	require.NoError(t, world.Bcast(dir, 0))
	path := filepath.Join(strings.TrimRight(string(dir), "\x00"), "slabs")
	// every rank writes its slab of one file with a small chunk, so the write is a derived type
	require.NoError(t, SetChunkBytes(16))
	defer SetChunkBytes(DefaultChunkBytes)
	slab := make([]byte, 100)
	for i := range slab {
		slab[i] = byte(r*7 + i)
	}
	f, err := Create(world, path)
	require.NoError(t, err)
	require.NoError(t, f.WriteAtAll(int64(r)*100, slab))
	require.NoError(t, f.Close())
	require.NoError(t, f.Close(), "a second close is a no-op")
	assert.ErrorIs(t, f.WriteAtAll(0, slab), ErrState, "a closed file")
	f, err = Open(world, path)
	require.NoError(t, err)
	size, err := f.Size()
	require.NoError(t, err)
	assert.Equal(t, int64(n*100), size)
	next := make([]byte, 100)
	require.NoError(t, f.ReadAtAll(int64((r+1)%n)*100, next))
	for i := range next {
		assert.Equal(t, byte(((r+1)%n)*7+i), next[i])
	}
	assert.ErrorIs(t, f.ReadAtAll(int64(n)*100-50, next), ErrInvalidSpan, "past the end")
	require.NoError(t, f.Close())
	_, err = Open(world, path+".missing")
	var me *Error
	require.True(t, errors.As(err, &me), "a missing file is MPI's error, returned: %v", err)
	assert.Contains(t, err.Error(), "MPI_File_open")
}

func TestRankErrorsAreReturned(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	assert.ErrorIs(t, world.SendBytes(0, 0, n, 0), ErrInvalidSpan, "a rank past the last")
	assert.ErrorIs(t, world.Bcast(nil, -1), ErrInvalidSpan)
	assert.ErrorIs(t, Init(), ErrState, "a second Init")
	tr, err := NewTransport(world, dev)
	require.NoError(t, err)
	other, err := device.Open("sim:1")
	require.NoError(t, err)
	defer other.Close()
	a, err := devarray.Empty(other, devarray.Float32, 4)
	require.NoError(t, err)
	defer a.Free()
	assert.ErrorIs(t, tr.Send(a, r, 0), driver.ErrInvalidValue, "an array of another device")
	require.NoError(t, tr.Close())
	assert.ErrorIs(t, tr.Send(a, r, 0), ErrState, "a closed transport")
	if n < 2 {
		return
	}
	// a message longer than the receive: MPI's truncation comes back as an error, not an abort
	big := make([]byte, 64)
	switch r {
	case 0:
		p, unpin := goBytes(big)
		defer unpin()
		require.NoError(t, world.SendBytes(p, 64, 1, 3))
	case 1:
		small := make([]byte, 16)
		p, unpin := goBytes(small)
		defer unpin()
		err := world.RecvBytes(p, 16, 0, 3)
		var me *Error
		require.True(t, errors.As(err, &me), "truncation is an *Error: %v", err)
		assert.Contains(t, err.Error(), "MPI_Recv")
	}
	require.NoError(t, world.Barrier())
}

// An Alltoallv into an array longer than what it receives leaves the
// elements past the received blocks as they were, on every path: the
// receive's staging buffer (or a strided array's packed copy) holds only
// what MPI wrote, and must not overwrite the rest of the array.
func TestRankAlltoallvLeavesTheRestOfRecv(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	seed := sharedSeed(t, world)
	const per, spare = 5, 7 // elements each rank sends each rank; elements of recv past the received ones
	tests := []struct {
		name    string
		strided bool
	}{{"contiguous receive", false}, {"strided receive", true}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if i == 0 {
				defer t.Run("transposed receive", func(t *testing.T) { transposedAlltoallv(t, world, dev, seed) })
			}
			tr, err := NewTransport(world, dev)
			require.NoError(t, err)
			defer tr.Close()
			counts := make([]int64, n)
			for q := range counts {
				counts[q] = per
			}
			src := upload(t, dev, seeded(r, n*per, seed+uint64(i)), n*per)
			total := n*per + spare
			before := seeded(r+1000, total, seed+uint64(i)) // the receive's own values, fresh
			var dst, into *devarray.DevArray
			if tt.strided {
				// every other element of an array twice as long: strided, and the elements
				// between must stay as they were too
				both := seeded(r+2000, 2*total, seed+uint64(i))
				for k := range total {
					both[2*k] = before[k]
				}
				dst = upload(t, dev, both, 2*total)
				into, err = dst.Slice(0, 0, 2*total, 2)
				require.NoError(t, err)
				require.False(t, into.IsContiguous())
				require.NoError(t, tr.Alltoallv(src, counts, into, counts))
				got := download(t, dst)
				for k := range total {
					if k >= n*per {
						assert.Equal(t, before[k], got[2*k], "element %d past the received ones", k)
					}
					assert.Equal(t, both[2*k+1], got[2*k+1], "element %d between the view's", 2*k+1)
				}
				return
			}
			dst = upload(t, dev, before, total)
			into = dst
			require.NoError(t, tr.Alltoallv(src, counts, into, counts))
			got := download(t, dst)
			assert.Equal(t, before[n*per:], got[n*per:], "the elements past the received ones")
			for q := range n {
				theirs := seeded(q, n*per, seed+uint64(i))
				assert.Equal(t, theirs[r*per:(r+1)*per], got[q*per:(q+1)*per], "the block from rank %d", q)
			}
		})
	}
}

// transposedAlltoallv receives into a transposed view of a (rows, 3)
// array, which no one-axis view describes: the blocks land in its first
// row, which is the array's first column, and every other element stays.
func transposedAlltoallv(t *testing.T, world Comm, dev driver.Device, seed uint64) {
	r, n := world.Rank(), world.Size()
	const per, cols = 3, 3
	rows := n*per + 2
	tr, err := NewTransport(world, dev)
	require.NoError(t, err)
	defer tr.Close()
	counts := make([]int64, n)
	for q := range counts {
		counts[q] = per
	}
	src := upload(t, dev, seeded(r, n*per, seed+7), n*per)
	before := seeded(r+3000, rows*cols, seed+7)
	dst := upload(t, dev, before, rows, cols)
	view, err := dst.Permute(1, 0)
	require.NoError(t, err)
	require.NoError(t, tr.Alltoallv(src, counts, view, counts))
	got := download(t, dst)
	for i := range rows {
		for j := range cols {
			if j == 0 && i < n*per {
				q, k := i/per, i%per
				assert.Equal(t, seeded(q, n*per, seed+7)[r*per+k], got[i*cols], "element %d of the block from rank %d", k, q)
				continue
			}
			assert.Equal(t, before[i*cols+j], got[i*cols+j], "element (%d, %d), not received into", i, j)
		}
	}
}

// When one rank's Alltoallv cannot go ahead (counts its arrays cannot
// hold, a negative count, a staging buffer or copy that fails, spans that
// are not spans), every rank returns an error, none waits for ever on the
// collective the others never make, and the next Alltoallv works.
func TestRankAlltoallvRanksAgreeOnRefusal(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	bad := n - 1 // the last rank misbehaves: rank 0 too when it is alone
	seed := sharedSeed(t, world)
	fails, ok := dev.(interface {
		FailAlloc(int64)
		FailCopy(int64)
	})
	require.True(t, ok, "a sim device injects failures")
	per := 1 + int(seed%17)
	tests := []struct {
		name string
		// breaks this rank's call: counts or arrays, or the device
		spoil func(send, recv []int64)
		call  func(tr *Transport, src, dst *devarray.DevArray, send, recv []int64) error
	}{
		{name: "more to send than the array holds", spoil: func(send, _ []int64) { send[0] += 3 }},
		{name: "a negative count", spoil: func(_, recv []int64) { recv[0] = -1 }},
		{name: "a count for a rank too many", spoil: nil, call: func(tr *Transport, src, dst *devarray.DevArray, send, recv []int64) error {
			return tr.Alltoallv(src, append(send, 1), dst, recv)
		}},
		{name: "the staging copy fails", spoil: func(_, _ []int64) { fails.FailCopy(1) }},
		{name: "the staging buffer cannot be allocated", spoil: func(_, _ []int64) { fails.FailAlloc(1) }},
		{name: "spans at negative offsets", call: func(tr *Transport, src, dst *devarray.DevArray, send, recv []int64) error {
			spans := make([]Span, n)
			for q := range spans {
				spans[q] = Span{Off: -4, Len: 4}
			}
			return world.AlltoallvBytes(uintptr(src.Ptr()), spans, uintptr(dst.Ptr()), spans)
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := NewTransport(world, dev)
			require.NoError(t, err)
			defer tr.Close()
			counts := func() []int64 {
				c := make([]int64, n)
				for q := range c {
					c[q] = int64(per)
				}
				return c
			}
			src := upload(t, dev, seeded(r, n*per, seed+uint64(i)), n*per)
			dst, err := devarray.Empty(dev, devarray.Float32, n*per)
			require.NoError(t, err)
			defer dst.Free()
			send, recv := counts(), counts()
			call := func(tr *Transport, src, dst *devarray.DevArray, send, recv []int64) error {
				return tr.Alltoallv(src, send, dst, recv)
			}
			if tt.call != nil && r == bad {
				call = tt.call
			}
			if tt.spoil != nil && r == bad {
				tt.spoil(send, recv)
			}
			done := make(chan error, 1)
			go func() { done <- call(tr, src, dst, send, recv) }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				require.FailNow(t, "Alltoallv still waiting after 20 s: the ranks did not agree")
			}
			require.Error(t, err, "every rank returns an error when rank %d cannot go ahead", bad)
			if r != bad {
				assert.ErrorIs(t, err, ErrPeerFailed, "the other ranks say another rank failed")
			} else {
				assert.NotErrorIs(t, err, ErrPeerFailed, "the failing rank says its own error")
			}
			fails.FailAlloc(0)
			fails.FailCopy(0)
			// the ranks are still in step: the next Alltoallv moves every block
			require.NoError(t, tr.Alltoallv(src, counts(), dst, counts()))
			got := download(t, dst)
			for q := range n {
				assert.Equal(t, seeded(q, n*per, seed+uint64(i))[r*per:(r+1)*per], got[q*per:(q+1)*per], "the block from rank %d", q)
			}
		})
	}
}

// A Gather whose parts add up to more than one MPI call takes (or with a
// part too long itself) is refused by every rank alike, and the ranks
// stay in step: the next Gather works. The limit is lowered from 2 GiB
// for the test.
func TestRankGatherRefusedByEveryRank(t *testing.T) {
	world, _ := rankSetup(t)
	r, n := world.Rank(), world.Size()
	defer func(old int64) { maxGather = old }(maxGather)
	seed := sharedSeed(t, world)
	g := rand.New(rand.NewPCG(seed, uint64(r)))
	part := func(k int) []byte {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte(g.IntN(256))
		}
		return b
	}
	tests := []struct {
		name  string
		limit int64
		size  func(rank int) int
	}{
		{"the parts add up past the limit", int64(100*n - 1), func(int) int { return 100 }},
		{"the last rank's part is past the limit", 50, func(rank int) int {
			if rank == n-1 {
				return 51
			}
			return 10
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxGather = tt.limit
			done := make(chan error, 1)
			go func() { _, err := world.Gather(part(tt.size(r)), 0); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				require.FailNow(t, "Gather still waiting after 20 s: the ranks did not agree")
			}
			assert.ErrorIs(t, err, ErrTooLarge, "rank %d", r)
			maxGather = MaxCount
			mine := part(1 + r)
			all, err := world.Gather(mine, n-1)
			require.NoError(t, err)
			if r == n-1 {
				require.Len(t, all, n)
				assert.Equal(t, mine, all[r])
				for q := range all {
					assert.Len(t, all[q], 1+q)
				}
			}
		})
	}
}

// Every staging copy of an Alltoallv (its send staged out, its receive
// staged in) that fails makes the call return an error: the k-th fails
// for k = 1 to the copies a call makes, on every rank alike. Strided
// arrays are packed and unpacked by kernels on sim, which FailCopy does
// not fail.
func TestRankAlltoallvReturnsEveryFailedCopy(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	fails, ok := dev.(interface{ FailCopy(int64) })
	require.True(t, ok, "a sim device injects failed copies")
	seed := sharedSeed(t, world)
	const per = 6
	counts := make([]int64, n)
	for q := range counts {
		counts[q] = per
	}
	tr, err := NewTransport(world, dev)
	require.NoError(t, err)
	defer tr.Close()
	src := upload(t, dev, seeded(r, 2*n*per, seed), 2*n*per)
	send, err := src.Slice(0, 0, 2*n*per, 2) // strided: packed first
	require.NoError(t, err)
	dst := upload(t, dev, seeded(r+500, 2*n*per, seed), 2*n*per)
	recv, err := dst.Slice(0, 1, 2*n*per, 2) // strided: unpacked after
	require.NoError(t, err)
	before := dev.Ledger().Snapshot()
	require.NoError(t, tr.Alltoallv(send, counts, recv, counts))
	d := accounting.Diff(before, dev.Ledger().Snapshot())
	made := d.Copies[accounting.HtoD][accounting.PathPinned].Count + d.Copies[accounting.DtoH][accounting.PathPinned].Count
	require.Equal(t, int64(2), made, "staged out, staged in")
	for k := int64(1); k <= made; k++ {
		fails.FailCopy(k)
		err := tr.Alltoallv(send, counts, recv, counts)
		fails.FailCopy(0)
		assert.Error(t, err, "copy %d of %d failed", k, made)
	}
}

// A receive into a strided array that MPI fails (a message longer than
// the array) leaves the array as it was: the packed copy it would have
// been unpacked from holds nothing received.
func TestRankFailedStridedRecvLeavesTheArray(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	if n < 2 {
		t.Skip("a message between two ranks")
	}
	seed := sharedSeed(t, world)
	tr, err := NewTransport(world, dev)
	require.NoError(t, err)
	defer tr.Close()
	const long, short = 64, 16
	switch r {
	case 0:
		require.NoError(t, tr.Send(upload(t, dev, seeded(0, long, seed), long), 1, 5))
	case 1:
		mine := seeded(1, 2*short, seed)
		dst := upload(t, dev, mine, 2*short)
		into, err := dst.Slice(0, 0, 2*short, 2)
		require.NoError(t, err)
		err = tr.Recv(into, 0, 5)
		var me *Error
		require.True(t, errors.As(err, &me), "truncation is MPI's error: %v", err)
		assert.Equal(t, mine, download(t, dst), "the array is as it was")
	}
	require.NoError(t, world.Barrier())
}

// A collective write or read that one rank cannot make (a negative
// offset) returns an error on every rank, ErrPeerFailed on the others,
// and the file can still be closed by all.
func TestRankFileRefusalIsEveryRanks(t *testing.T) {
	world, _ := rankSetup(t)
	r, n := world.Rank(), world.Size()
	dir := make([]byte, 256)
	if r == 0 {
		copy(dir, t.TempDir())
	}
	require.NoError(t, world.Bcast(dir, 0))
	path := filepath.Join(strings.TrimRight(string(dir), "\x00"), "refused")
	slab := seededBytes(r, 32)
	off := func() int64 {
		if r == n-1 {
			return -int64(1 + rand.IntN(1000))
		}
		return int64(r) * 32
	}
	tests := []struct {
		name string
		call func(f *File) error
	}{
		{"write at a negative offset", func(f *File) error { return f.WriteAtAll(off(), slab) }},
		{"read at a negative offset", func(f *File) error { return f.ReadAtAll(off(), make([]byte, 32)) }},
	}
	f, err := Create(world, path)
	require.NoError(t, err)
	require.NoError(t, f.WriteAtAll(int64(r)*32, slab))
	require.NoError(t, f.Close())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Open(world, path)
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- tt.call(f) }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				require.FailNow(t, "still waiting after 20 s: the ranks did not agree")
			}
			require.Error(t, err)
			if r != n-1 {
				assert.ErrorIs(t, err, ErrPeerFailed)
			}
			require.NoError(t, f.Close())
		})
	}
}

// seededBytes returns n random bytes for rank r.
func seededBytes(r, n int) []byte {
	g := rand.New(rand.NewPCG(uint64(r)+7, rand.Uint64()))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.IntN(256))
	}
	return b
}

// Empty blocks (a rank sends nothing to some ranks) go through both
// Alltoallv's paths: MPI_BYTE counts and, with a small chunk, derived
// datatypes, where an empty block is a struct of no blocks.
func TestRankAlltoallvEmptyBlocks(t *testing.T) {
	world, dev := rankSetup(t)
	r, n := world.Rank(), world.Size()
	seed := sharedSeed(t, world)
	g := rand.New(rand.NewPCG(seed, 11))
	counts := make([][]int64, n)
	for p := range counts {
		counts[p] = make([]int64, n)
		for q := range counts[p] {
			if (p+q)%2 == 1 || n == 1 {
				counts[p][q] = 1 + g.Int64N(100)
			}
		}
	}
	for _, chunk := range []int64{DefaultChunkBytes, 32} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			require.NoError(t, SetChunkBytes(chunk))
			defer SetChunkBytes(DefaultChunkBytes)
			tr, err := NewTransport(world, dev)
			require.NoError(t, err)
			defer tr.Close()
			send, recv := make([]int64, n), make([]int64, n)
			for q := range n {
				send[q], recv[q] = counts[r][q], counts[q][r]
			}
			src := upload(t, dev, seeded(r, int(sumOf(send))+1, seed+uint64(chunk)), int(sumOf(send))+1)
			dst, err := devarray.Empty(dev, devarray.Float32, int(sumOf(recv))+1)
			require.NoError(t, err)
			defer dst.Free()
			require.NoError(t, tr.Alltoallv(src, send, dst, recv))
			got := download(t, dst)
			var at int64
			for q := range n {
				var off int64
				for k := range r {
					off += counts[q][k]
				}
				theirs := seeded(q, int(sumOf(counts[q]))+1, seed+uint64(chunk))
				assert.Equal(t, theirs[off:off+counts[q][r]], got[at:at+counts[q][r]], "the block from rank %d", q)
				at += counts[q][r]
			}
		})
	}
}

// sharedSeed is a fresh random seed that every rank of world gets alike
// (the largest of the ranks' own draws), so the ranks build the same tables.
func sharedSeed(t *testing.T, world Comm) uint64 {
	t.Helper()
	seed, err := world.AllreduceInt64([]int64{rand.Int64N(1 << 40)}, true)
	require.NoError(t, err)
	return uint64(seed[0])
}
