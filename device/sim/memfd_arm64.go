//go:build linux && arm64

package sim

// sysMemfdCreate is memfd_create's number; package syscall has no constant for it.
const sysMemfdCreate = 279
