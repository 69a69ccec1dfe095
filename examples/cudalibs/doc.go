// Command cudalibs hands cuarray's arrays to NVIDIA's CUDA libraries in
// place, on cuarray's stream: an SGEMM through cuBLAS and a complex FFT
// through cuFFT, each checked against a Go reference. It is the example
// of the guide's "CUDA libraries from Go": a DevArray's Ptr is the raw
// device address such a library takes, a stream's Handle its
// cudaStream_t, and cuarray's cuda backend uses the device's primary
// context, the one the CUDA runtime (and so cuBLAS and cuFFT) uses.
//
// It builds with -tags cuda,cudalibs, against cuBLAS and cuFFT (Debian's
// nvidia-cuda-dev ships their headers and libraries; make cuda-deps), and
// runs on a GPU:
//
//	go run -tags cuda,cudalibs ./examples/cudalibs
//
// Built without those tags, it says what it needs and exits with status 2.
package main
