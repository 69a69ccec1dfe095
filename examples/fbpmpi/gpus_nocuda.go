//go:build mpi && !cuda

package main

// gpus returns how many GPUs this process sees: none without the cuda build.
func gpus() int { return 0 }
