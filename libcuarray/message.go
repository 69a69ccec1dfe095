//go:build cgo

package main

import (
	"errors"

	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/internal/errline"
)

// faultPrefix starts the message of every error that says the device's
// context failed (device.ErrContextFailed), on every backend: the cuda
// backend's message is the driver's ("CUDA_ERROR_ILLEGAL_ADDRESS (700):
// ..."), sim's its own, and callers (python/cuarray.py's
// DeviceFaultError) need one thing to test.
const faultPrefix = "device fault: "

// racePrefix starts the message of a stream race the stream race checker
// found (device.ErrStreamRace, "sim:N?check=streams"): python/cuarray.py
// raises StreamRaceError for it. The report's lines follow.
const racePrefix = "stream race: "

// message is the text C receives for err: its message, on one line with
// the fault's repeats dropped and faultPrefix in front when the device's
// context failed (every cleanup call after a fault repeats it).
func message(err error) string {
	if errors.Is(err, device.ErrContextFailed) {
		return faultPrefix + errline.Of(err)
	}
	if errors.Is(err, device.ErrStreamRace) {
		return racePrefix + err.Error()
	}
	return err.Error()
}
