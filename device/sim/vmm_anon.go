//go:build !linux || !(amd64 || arm64) || sim_nomemfd

package sim

import (
	"errors"
	"fmt"
)

// Without Linux's memory file there is no file to map a part of into a
// reservation: sim's virtual memory is unsupported there.
var errNoVMM = fmt.Errorf("sim emulates virtual memory management by mapping Linux's memfd, which this system lacks: %w", errors.ErrUnsupported)

// hostReservation is never made here.
type hostReservation struct{}

func vmmSupported() error { return errNoVMM }

func reserveHost(int64, int64) (hostReservation, error) { return hostReservation{}, errNoVMM }

func (hostReservation) start() uintptr                         { return 0 }
func (hostReservation) bytes(int64, int64) []byte              { return nil }
func (hostReservation) mapFile(int64, int64, int, int64) error { return errNoVMM }
func (hostReservation) unmap(int64, int64) error               { return errNoVMM }
func (hostReservation) free()                                  {}
