package interop_test

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/interop"
)

// FuzzParsePoolIPC: any bytes parse or are refused, never panic; what
// parses marshals back to a descriptor that parses the same.
func FuzzParsePoolIPC(f *testing.F) {
	f.Add([]byte(`{"backend":"sim","device":0,"export":"` + hex.EncodeToString(make([]byte, 64)) + `","offset":256,"size":4096,"shape":[4,4],"strides":[16,4],"dtype":"float32"}`))
	f.Add([]byte(`{"export":"abc"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := interop.ParsePoolIPC(data)
		if err != nil {
			require.ErrorIs(t, err, interop.ErrInterface)
			return
		}
		js, err := json.Marshal(d)
		require.NoError(t, err)
		again, err := interop.ParsePoolIPC(js)
		require.NoError(t, err)
		require.Equal(t, d.Export, again.Export)
	})
}

// FuzzReceivePoolFD: whatever bytes come on the socket with one
// descriptor, ReceivePoolFD returns the message SendPoolFD's framing
// says or an error with no descriptor, and never panics.
func FuzzReceivePoolFD(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0, 'a', 'b', 'c'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || len(data) > 1<<16 {
			return
		}
		fds, err := socketFDs()
		require.NoError(t, err)
		c, oc := unixConn(t, fds[0]), unixConn(t, fds[1])
		null, err := os.Open(os.DevNull)
		require.NoError(t, err)
		defer null.Close()
		_, _, err = oc.WriteMsgUnix(data, syscall.UnixRights(int(null.Fd())), nil)
		require.NoError(t, err)
		oc.CloseWrite()
		fd, msg, err := interop.ReceivePoolFD(c)
		if err != nil {
			require.Equal(t, -1, fd)
			return
		}
		defer syscall.Close(fd)
		n := int(binary.LittleEndian.Uint32(data))
		require.Equal(t, data[4:4+n], msg, "the message its length says; what follows is the next one's")
	})
}

// socketFDs returns a connected pair of Unix stream sockets, closed on
// exec (SOCK_CLOEXEC is Linux's; CloseOnExec is every Unix's).
func socketFDs() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	return fds, err
}

func unixConn(t *testing.T, fd int) *net.UnixConn {
	f := osFile(fd)
	defer f.Close()
	c, err := net.FileConn(f)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c.(*net.UnixConn)
}

func osFile(fd int) *os.File { return os.NewFile(uintptr(fd), "socket") }
