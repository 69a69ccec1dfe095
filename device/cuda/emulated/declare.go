//go:build cuda && cudaemu && linux

package emulated

import (
	"sync"
	"syscall"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/driver"
)

// Declaration is what the cuda backend says of the next kernel launch on
// the calling OS thread (package kernel's LaunchDeclared), which
// cuLaunchKernel cannot carry: the memory the kernel's array arguments
// are, and whether it may write them, and the ledger that counts the
// launch. The stream race checker judges the launch by the arrays, the
// interpreter reports a write into a read-only one, and the ledger gets
// the launch with the bytes the kernel read and wrote.
type Declaration struct {
	Arrays []driver.Range
	Ledger *accounting.Ledger
}

// declarations are the declarations made for the next launch, per OS thread.
var declarations sync.Map // thread id → *Declaration

// DeclareLaunch makes d the declaration of the next cuLaunchKernel on the
// calling OS thread (the caller has it locked), which takes it whether it
// launches or fails. A nil d takes a declaration back.
func DeclareLaunch(d *Declaration) {
	if d == nil {
		declarations.Delete(syscall.Gettid())
		return
	}
	declarations.Store(syscall.Gettid(), d)
}

// takeDeclaration returns the calling thread's declaration, if any, and
// forgets it.
func takeDeclaration() *Declaration {
	d, ok := declarations.LoadAndDelete(syscall.Gettid())
	if !ok {
		return nil
	}
	return d.(*Declaration)
}
