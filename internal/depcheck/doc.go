// Package depcheck holds a test of what cuarray's core packages link: a
// program that imports only devarray, device, transfer and accounting
// links the Go standard library and nothing else — none of the modules
// gorgonia.org/tensor brings in for package interop/gorgonia; and a
// program that imports interop for CAI, DLPack and IPC links none of them
// either.
package depcheck
