package interop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
)

// A shared pool's descriptor (driver.SharedMemPool.ExportFD) reaches
// another process over a Unix domain socket as SCM_RIGHTS ancillary data:
// the kernel installs a copy of the descriptor in the receiver. SendPoolFD
// sends it with a message (the PoolIPCDescriptor's JSON, say) framed as a
// 4-byte little-endian length then the bytes, the descriptor riding on the
// first byte; ReceivePoolFD reads both. Python's socket.recv_fds reads the
// same (python/cuarray.py's receive_pool).

// MaxPoolMessage bounds the message SendPoolFD sends with a descriptor.
const MaxPoolMessage = 1 << 20

// SendPoolFD sends fd and msg over conn. fd stays the caller's to close.
func SendPoolFD(conn *net.UnixConn, fd int, msg []byte) error {
	if len(msg) > MaxPoolMessage {
		return fmt.Errorf("interop: send pool descriptor: a message of %d bytes, at most %d: %w", len(msg), MaxPoolMessage, ErrInterface)
	}
	if fd < 0 {
		return fmt.Errorf("interop: send pool descriptor: descriptor %d: %w", fd, ErrInterface)
	}
	buf := binary.LittleEndian.AppendUint32(nil, uint32(len(msg)))
	buf = append(buf, msg...)
	n, _, err := conn.WriteMsgUnix(buf, syscall.UnixRights(fd), nil)
	if err != nil {
		return fmt.Errorf("interop: send pool descriptor: %w", err)
	}
	if _, err := conn.Write(buf[n:]); err != nil {
		return fmt.Errorf("interop: send pool descriptor: %w", err)
	}
	return nil
}

// ReceivePoolFD receives a descriptor and its message that SendPoolFD
// sent. The descriptor is the caller's to close. A message without a
// descriptor, or with more than one, is an error wrapping ErrInterface,
// and every descriptor that came with it is closed.
func ReceivePoolFD(conn *net.UnixConn) (int, []byte, error) {
	fd, msg, err := receivePoolFD(conn)
	if err != nil {
		if fd >= 0 {
			syscall.Close(fd)
		}
		return -1, nil, fmt.Errorf("interop: receive pool descriptor: %w", err)
	}
	return fd, msg, nil
}

// receivePoolFD reads what SendPoolFD sent: the descriptor received (-1
// if none), which the caller closes on error too.
func receivePoolFD(conn *net.UnixConn) (int, []byte, error) {
	head := make([]byte, 4)
	oob := make([]byte, syscall.CmsgSpace(4*4)) // room for a few, to close extras
	n, oobn, _, _, err := conn.ReadMsgUnix(head, oob)
	if err != nil {
		return -1, nil, err
	}
	fds, err := unixRights(oob[:oobn])
	if err != nil {
		return -1, nil, err
	}
	if len(fds) != 1 {
		for _, f := range fds {
			syscall.Close(f)
		}
		return -1, nil, fmt.Errorf("%d descriptors came with the message, want 1: %w", len(fds), ErrInterface)
	}
	fd := fds[0]
	if _, err := io.ReadFull(conn, head[n:]); err != nil {
		return fd, nil, err
	}
	size := binary.LittleEndian.Uint32(head)
	if size > MaxPoolMessage {
		return fd, nil, fmt.Errorf("a message of %d bytes, at most %d: %w", size, MaxPoolMessage, ErrInterface)
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(conn, msg); err != nil {
		return fd, nil, err
	}
	return fd, msg, nil
}

// unixRights returns the descriptors of the SCM_RIGHTS messages in oob.
func unixRights(oob []byte) ([]int, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("ancillary data: %v: %w", err, ErrInterface)
	}
	var fds []int
	var errs []error
	for i := range msgs {
		got, err := syscall.ParseUnixRights(&msgs[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fds = append(fds, got...)
	}
	if len(errs) > 0 {
		for _, f := range fds {
			syscall.Close(f)
		}
		return nil, fmt.Errorf("ancillary data: %v: %w", errors.Join(errs...), ErrInterface)
	}
	return fds, nil
}
