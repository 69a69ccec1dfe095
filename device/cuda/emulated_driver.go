//go:build cuda && cudaemu && linux

package cuda

// A build with the tag cudaemu runs this backend on the emulated CUDA
// driver (package emulated) instead of libcuda.so.1: the backend itself is
// unchanged.
import (
	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device/cuda/emulated"
	"github.com/cuarray/cuarray/device/driver"
)

// UndefinedUses returns the uses of destroyed stream and event handles the
// emulated driver has seen in this process so far (emulated.Misuses):
// undefined behaviour, which killed the process on an H100. Tests fail
// when one appears (internal/testdev).
func (d *Device) UndefinedUses() []string { return emulated.Misuses() }

// resultDetail is the emulated driver's report of the kernel behind result
// c of the calling thread's last driver call (emulated.Detail), for the
// error check makes of it.
func resultDetail(c int) string { return emulated.Detail(c) }

// declareLaunch hands the arrays of the kernel launch the calling thread
// makes next, and the ledger that counts it, to the emulated driver,
// which checks them and counts the launch when the kernel has run: it
// reports true, the launch is counted.
func declareLaunch(arrays []driver.Range, led *accounting.Ledger) bool {
	emulated.DeclareLaunch(&emulated.Declaration{Arrays: arrays, Ledger: led})
	return true
}

// reportManaged hands the device's ledger to the emulated driver, on a
// thread where the device's context is current, to count its managed
// memory's page faults, duplicates and migrations.
func reportManaged(led *accounting.Ledger) { emulated.ReportManaged(led) }

// flushManaged does nothing on the emulated driver: it records each page's
// migration in the ledger as it happens.
func flushManaged(*accounting.Ledger) {}

// hostTouch tells the emulated driver, on a thread where the device's
// context is current, that the host is about to touch the managed bytes
// [p, p+n): it holds the access to the rules sim keeps and moves the
// pages to the host, as a GPU's driver does on the host's faults.
func hostTouch(p devarray.Ptr, n int64, write bool) error { return emulated.HostTouch(p, n, write) }

// declarePageable tells the emulated driver, on a thread where the
// device's context is current, that its kernels may touch the pageable
// host memory b in place (emulated.DeclarePageable): its interpreter
// reaches only host memory so declared.
func declarePageable(b []byte) error { return emulated.DeclarePageable(b) }

// releasePageable ends a declarePageable of b (emulated.ReleasePageable).
func releasePageable(b []byte) error { return emulated.ReleasePageable(b) }
