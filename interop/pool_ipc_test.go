package interop_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"github.com/cuarray/cuarray/interop"
)

// The pool IPC tests: this process exports a shared pool's descriptor and
// an allocation's export data over a Unix socket (SCM_RIGHTS) to a second
// process of this test binary (poolChildEnv says which part it plays),
// which imports them and reports what it saw as JSON on stdout.

const (
	poolChildEnv  = "CUARRAY_POOL_CHILD" // "import" or "export-and-exit"
	poolWantEnv   = "CUARRAY_POOL_WANT"  // the bytes the importer must read, hex
	poolSocketFD  = 3                    // the child's end of the socket (cmd.ExtraFiles[0])
	poolChildSpec = "CUARRAY_POOL_SPEC"  // the device the child opens
	poolTestTime  = time.Minute          // a socket that stays silent longer fails the test
)

// poolChildResult is what an importing child reports.
type poolChildResult struct {
	Error        string `json:"error,omitempty"`
	Stale        bool   `json:"stale"`   // driver.ErrStaleIPCHandle
	Invalid      bool   `json:"invalid"` // driver.ErrInvalidValue
	Matched      bool   `json:"matched"` // it read the exporter's bytes
	Opened       int64  `json:"ipc_opened"`
	Closed       int64  `json:"ipc_closed"`
	Current      int64  `json:"ipc_current"`
	DeviceAllocs int64  `json:"device_allocs"`
	PoolAllocs   int64  `json:"stream_ordered_allocs"`
}

// socketPair returns this process's end of a new Unix socket pair, as a
// *net.UnixConn, and the other end as a file for a child.
func socketPair(t *testing.T) (*net.UnixConn, *os.File) {
	t.Helper()
	fds, err := socketFDs()
	require.NoError(t, err)
	mine := os.NewFile(uintptr(fds[0]), "pool socket")
	defer mine.Close()
	c, err := net.FileConn(mine)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	theirs := os.NewFile(uintptr(fds[1]), "pool socket, child's end")
	t.Cleanup(func() { theirs.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(poolTestTime)))
	return c.(*net.UnixConn), theirs
}

// startPoolChild starts this test binary as a pool child playing role,
// with the socket's other end as its descriptor 3.
func startPoolChild(t *testing.T, dev device.Device, role string, theirs *os.File, env ...string) (*exec.Cmd, func() []byte) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), poolChildEnv+"="+role, poolChildSpec+"="+dev.Info().Name, "GORACE=atexit_sleep_ms=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.ExtraFiles = []*os.File{theirs}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	require.NoError(t, cmd.Start())
	theirs.Close()
	return cmd, func() []byte {
		require.NoError(t, cmd.Wait(), "the child: %s", stderr.String())
		return out.Bytes()
	}
}

// sharedArray makes a shared pool on dev and an array of its memory
// holding random bytes, complete on the device.
func sharedArray(t *testing.T, dev device.Device, shape ...int) (driver.SharedMemPool, driver.Stream, *devarray.DevArray, []byte) {
	t.Helper()
	ps, ok := dev.(driver.PoolSharing)
	if !ok {
		t.Skipf("%v cannot share pools", dev.DeviceID())
	}
	pool, err := ps.NewSharedMemPool()
	skipWithoutIPC(t, err)
	require.NoError(t, err)
	t.Cleanup(func() { pool.Destroy() })
	s, err := dev.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	a, err := devarray.EmptyAsync(dev, driver.PoolStream{AsyncAllocator: s, Pool: pool}, devarray.Float32, shape...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Free() })
	// "The imported memory must not be accessed before the allocation
	// operation completes in the exporting process." (cuMemPoolImportPointer)
	require.NoError(t, s.Synchronize())
	want := make([]byte, a.NBytes())
	r := rand.For(t)
	for i := range want {
		want[i] = byte(r.IntN(256))
	}
	require.NoError(t, a.CopyFrom(want))
	return pool, s, a, want
}

// sendPool sends pool's descriptor and the JSON of d over c.
func sendPool(t *testing.T, c *net.UnixConn, pool driver.SharedMemPool, d any) {
	t.Helper()
	fd, err := pool.ExportFD()
	require.NoError(t, err)
	defer syscall.Close(fd)
	js, err := json.Marshal(d)
	require.NoError(t, err)
	require.NoError(t, interop.SendPoolFD(c, fd, js))
}

func importChild(t *testing.T, dev device.Device, pool driver.SharedMemPool, d interop.PoolIPCDescriptor, want []byte) poolChildResult {
	t.Helper()
	c, theirs := socketPair(t)
	_, wait := startPoolChild(t, dev, "import", theirs, poolWantEnv+"="+hex.EncodeToString(want))
	sendPool(t, c, pool, d)
	out := wait()
	var res poolChildResult
	require.NoError(t, json.Unmarshal(out, &res), "the child's report: %s", out)
	return res
}

// Another process imports the pool and a view of an allocation, reads the
// bytes this one wrote and writes their complement back; its ledger counts
// the import as kind ipc, no allocation, and nothing left after the free.
// Once the exporter has freed the allocation, or destroyed the pool, an
// import is stale.
func TestPoolIPCAcrossProcesses(t *testing.T) {
	dev := testdev.Open(t)
	pool, s, a, all := sharedArray(t, dev, 32, 24)
	v, err := a.Slice(0, 2, 30, 3)
	require.NoError(t, err)
	v, err = v.Slice(1, 1, 23, 2)
	require.NoError(t, err)
	want := make([]byte, v.NBytes())
	require.NoError(t, v.CopyTo(want))
	d, err := interop.ExportPoolIPC(dev, pool, a, v)
	require.NoError(t, err)
	assert.Equal(t, v.Shape(), d.Shape)
	assert.Equal(t, a.NBytes(), d.Size)

	res := importChild(t, dev, pool, d, want)
	require.Empty(t, res.Error)
	assert.True(t, res.Matched, "the child read this process's bytes")
	assert.Equal(t, int64(1), res.Opened, "the import is counted as ipc")
	assert.Equal(t, int64(1), res.Closed, "its free is counted")
	assert.Zero(t, res.Current, "nothing stays mapped")
	assert.Zero(t, res.DeviceAllocs+res.PoolAllocs, "importing allocates nothing")

	got := make([]byte, v.NBytes())
	require.NoError(t, v.CopyTo(got))
	for i := range want {
		require.Equal(t, ^want[i], got[i], "byte %d: the child wrote into this process's memory", i)
	}
	rest := make([]byte, a.NBytes())
	require.NoError(t, a.CopyTo(rest))
	assert.NotEqual(t, all, rest, "the view's bytes changed")

	require.NoError(t, a.FreeAsync(s))
	res = importChild(t, dev, pool, d, want)
	assert.True(t, res.Stale, "a freed allocation's export data is stale: %s", res.Error)
	assert.Zero(t, res.Opened)

	require.NoError(t, pool.Destroy())
	_, err = pool.ExportFD()
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "a destroyed pool exports nothing")
}

// A pool destroyed after its descriptor was sent, and an exporter that has
// exited, make imports stale: the pool's import, or the pointer's import
// from a pool imported while the exporter lived.
func TestPoolIPCStale(t *testing.T) {
	dev := testdev.Open(t)
	pool, _, a, want := sharedArray(t, dev, 64)
	d, err := interop.ExportPoolIPC(dev, pool, a, a)
	require.NoError(t, err)
	c, theirs := socketPair(t)
	_, wait := startPoolChild(t, dev, "import", theirs, poolWantEnv+"="+hex.EncodeToString(want), "CUARRAY_POOL_DESTROY_FIRST=1")
	sendPool(t, c, pool, d)
	require.NoError(t, a.Free())
	require.NoError(t, pool.Destroy())
	_, err = c.Write([]byte{1}) // the child imports now
	require.NoError(t, err)
	var res poolChildResult
	out := wait()
	require.NoError(t, json.Unmarshal(out, &res), "%s", out)
	assert.True(t, res.Stale, "a destroyed pool's import is stale: %s", res.Error)
	if testdev.IsSim(dev) { // a GPU's driver says CUDA_ERROR_INVALID_VALUE, no more
		assert.Contains(t, res.Error, "destroyed")
	}

	// The exporter is the child; this process imports.
	c, theirs = socketPair(t)
	cmd, wait := startPoolChild(t, dev, "export-and-exit", theirs)
	fd, msg, err := interop.ReceivePoolFD(c)
	require.NoError(t, err)
	defer syscall.Close(fd)
	ip, err := interop.ImportPool(dev, fd)
	require.NoError(t, err, "the pool imports while its exporter lives")
	defer ip.Destroy()
	_, err = c.Write([]byte{1}) // the child exits now
	require.NoError(t, err)
	wait()
	require.NotNil(t, cmd.ProcessState)
	pd, err := interop.ParsePoolIPC(msg)
	require.NoError(t, err)
	_, err = interop.OpenPoolIPC(dev, ip, pd)
	assert.ErrorIs(t, err, driver.ErrStaleIPCHandle, "an exited exporter's allocation")
	if testdev.IsSim(dev) {
		assert.Contains(t, fmt.Sprint(err), "exited")
	}
	_, err = interop.ImportPool(dev, fd)
	assert.ErrorIs(t, err, driver.ErrStaleIPCHandle, "an exited exporter's pool")
	assert.Zero(t, dev.Ledger().Current(accounting.IPC))
}

// What is not a shared pool's, or not this pool's, is refused with a
// typed error, and nothing stays mapped.
func TestPoolIPCForeign(t *testing.T) {
	dev := testdev.Open(t)
	pool, s, a, want := sharedArray(t, dev, 16)
	ps := dev.(driver.PoolSharing)

	plain, err := dev.NewMemPool()
	require.NoError(t, err)
	defer plain.Destroy()
	sp, ok := plain.(driver.SharedMemPool)
	if ok { // sim's and the cuda backend's pools all have the methods
		_, err = sp.ExportFD()
		assert.ErrorIs(t, err, driver.ErrNotShareable, "a pool made without a handle type does not export")
		p, err := s.MallocFromPoolAsync(256, plain)
		require.NoError(t, err)
		_, err = sp.ExportPointer(p)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "nor do its allocations")
		require.NoError(t, s.FreeAsync(p))
	}

	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for name, fd := range map[string]int{"/dev/null": int(devNull.Fd()), "a pipe": int(r.Fd()), "closed": 1 << 20} {
		_, err := ps.ImportMemPool(fd)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, name)
	}

	own, err := pool.ExportFD()
	require.NoError(t, err)
	defer syscall.Close(own)
	_, err = ps.ImportMemPool(own)
	assert.ErrorIs(t, err, driver.ErrOwnIPCHandle, "a process does not import its own pool")

	_, err = pool.ExportPointer(a.Ptr() + 4)
	assert.ErrorIs(t, err, driver.ErrInvalidValue, "not an allocation's start")

	// Export data of another shared pool, sent with this pool's descriptor.
	other, _, b, _ := sharedArray(t, dev, 16)
	d, err := interop.ExportPoolIPC(dev, other, b, b)
	require.NoError(t, err)
	res := importChild(t, dev, pool, d, want)
	assert.True(t, res.Invalid, "another pool's export data: %s", res.Error)
	assert.Zero(t, res.Opened)
	if testdev.IsSim(dev) {
		// The CUDA driver answers CUDA_ERROR_INVALID_VALUE for stale and
		// foreign data alike, and exports a pointer whatever pool is asked.
		assert.False(t, res.Stale, "it is foreign, not stale")
		assert.Contains(t, res.Error, "another pool")
		_, err = interop.ExportPoolIPC(dev, other, a, a)
		assert.ErrorIs(t, err, driver.ErrInvalidValue, "an allocation of another pool")
	}
	for _, bad := range []string{`{"export":"zz"}`, `{"export":"00"}`, `[]`, `{"export":"` + d.Export + `","size":-1,"dtype":"float32"}`} {
		_, err := interop.ParsePoolIPC([]byte(bad))
		assert.ErrorIs(t, err, interop.ErrInterface, bad)
	}
}

// A message without a descriptor, or with two, is refused, and the
// descriptors that came are closed; one descriptor arrives as the file
// sent.
func TestReceivePoolFDRefuses(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name string
		data []byte
		fds  []int
	}{
		{"no descriptor", []byte{2, 0, 0, 0, 'h', 'i'}, nil},
		{"two descriptors", []byte{0, 0, 0, 0}, []int{int(r.Fd()), int(w.Fd())}},
		{"too long a message", []byte{0xff, 0xff, 0xff, 0x7f}, []int{int(r.Fd())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, oc := connPair(t)
			var rights []byte
			if tc.fds != nil {
				rights = syscall.UnixRights(tc.fds...)
			}
			_, _, err := oc.WriteMsgUnix(tc.data, rights, nil)
			require.NoError(t, err)
			_, _, err = interop.ReceivePoolFD(c)
			assert.ErrorIs(t, err, interop.ErrInterface)
		})
	}
	c, oc := connPair(t)
	require.NoError(t, interop.SendPoolFD(oc, int(r.Fd()), []byte(`{"x":1}`)))
	fd, msg, err := interop.ReceivePoolFD(c)
	require.NoError(t, err)
	defer syscall.Close(fd)
	assert.Equal(t, `{"x":1}`, string(msg))
	var a, b syscall.Stat_t
	require.NoError(t, syscall.Fstat(fd, &a))
	require.NoError(t, syscall.Fstat(int(r.Fd()), &b))
	assert.Equal(t, b.Ino, a.Ino, "the descriptor names the sent file")
	assert.Error(t, interop.SendPoolFD(oc, -1, nil))
	assert.Error(t, interop.SendPoolFD(oc, int(r.Fd()), make([]byte, interop.MaxPoolMessage+1)))
}

// connPair returns both ends of a new Unix socket pair, each with a deadline.
func connPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	c, theirs := socketPair(t)
	other, err := net.FileConn(theirs)
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	oc := other.(*net.UnixConn)
	require.NoError(t, oc.SetDeadline(time.Now().Add(poolTestTime)))
	return c, oc
}

// poolChild plays the child's role of the pool IPC tests.
func poolChild() int {
	conn, err := net.FileConn(os.NewFile(poolSocketFD, "pool socket"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer conn.Close()
	c := conn.(*net.UnixConn)
	dev, err := device.Open(os.Getenv(poolChildSpec))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer dev.Close()
	if os.Getenv(poolChildEnv) == "export-and-exit" {
		return poolExportAndExit(dev, c)
	}
	res := poolImport(dev, c)
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	return 0
}

// poolImport receives a pool and a descriptor, imports the array, checks
// its bytes against $CUARRAY_POOL_WANT, writes their complement, frees it
// and reports.
func poolImport(dev device.Device, c *net.UnixConn) (res poolChildResult) {
	fail := func(err error) poolChildResult {
		res.Error = err.Error()
		res.Stale = errors.Is(err, driver.ErrStaleIPCHandle)
		res.Invalid = errors.Is(err, driver.ErrInvalidValue)
		return res
	}
	fd, msg, err := interop.ReceivePoolFD(c)
	if err != nil {
		return fail(err)
	}
	defer syscall.Close(fd)
	if os.Getenv("CUARRAY_POOL_DESTROY_FIRST") != "" {
		if _, err := c.Read(make([]byte, 1)); err != nil {
			return fail(err)
		}
	}
	pool, err := interop.ImportPool(dev, fd)
	if err != nil {
		return fail(err)
	}
	defer pool.Destroy()
	d, err := interop.ParsePoolIPC(msg)
	if err != nil {
		return fail(err)
	}
	a, err := interop.OpenPoolIPC(dev, pool, d)
	if err != nil {
		return fail(err)
	}
	got := make([]byte, a.NBytes())
	if err := a.CopyTo(got); err != nil {
		return fail(err)
	}
	res.Matched = hex.EncodeToString(got) == os.Getenv(poolWantEnv)
	for i := range got {
		got[i] = ^got[i]
	}
	if err := a.CopyFrom(got); err != nil {
		return fail(err)
	}
	if err := a.Free(); err != nil {
		return fail(err)
	}
	snap := dev.Ledger().Snapshot()
	res.Opened, res.Closed, res.Current = snap.Kinds[accounting.IPC].Allocs, snap.Kinds[accounting.IPC].Frees, snap.Kinds[accounting.IPC].Current
	res.DeviceAllocs, res.PoolAllocs = snap.Kinds[accounting.Device].Allocs, snap.Kinds[accounting.StreamOrdered].Allocs
	return res
}

// poolExportAndExit exports a shared pool and an allocation to the parent,
// waits for its byte, and exits without freeing anything.
func poolExportAndExit(dev device.Device, c *net.UnixConn) int {
	err := func() error {
		ps, ok := dev.(driver.PoolSharing)
		if !ok {
			return fmt.Errorf("%v cannot share pools", dev.DeviceID())
		}
		pool, err := ps.NewSharedMemPool()
		if err != nil {
			return err
		}
		s, err := dev.NewStream()
		if err != nil {
			return err
		}
		a, err := devarray.EmptyAsync(dev, driver.PoolStream{AsyncAllocator: s, Pool: pool}, devarray.Uint8, 512)
		if err != nil {
			return err
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		d, err := interop.ExportPoolIPC(dev, pool, a, a)
		if err != nil {
			return err
		}
		js, err := json.Marshal(d)
		if err != nil {
			return err
		}
		fd, err := pool.ExportFD()
		if err != nil {
			return err
		}
		if err := interop.SendPoolFD(c, fd, js); err != nil {
			return err
		}
		_, err = c.Read(make([]byte, 1))
		return err
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Exit(0) // exits with the pool and the allocation live
	return 0
}
