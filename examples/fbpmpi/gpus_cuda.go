//go:build mpi && cuda

package main

import "github.com/cuarray/cuarray/device/cuda"

// gpus returns how many GPUs this process sees (0 when the driver does not start).
func gpus() int {
	n, err := cuda.NumDevices()
	if err != nil {
		return 0
	}
	return n
}
