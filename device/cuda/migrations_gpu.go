//go:build cuda && !(cudaemu && linux)

package cuda

import (
	"errors"
	"sync"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/device/cuda/cupti"
)

// umCounter counts, on a GPU, the bytes the driver migrates of managed
// memory, from CUPTI's unified-memory counters (package cupti, loaded at
// run time). CUPTI has one subscriber a process, so the counter is the
// process's: it starts at the first managed allocation and its figures go
// to the ledger of the device that made it. Where it cannot start (no
// libcupti, a profiler holding CUPTI, no permission), every ledger of a
// device with managed memory says why (accounting.ManagedStats.Uncounted).
var umCounter migrationCounter

// migrationCounter is the process's CUPTI counter and the ledger it
// reports to.
type migrationCounter struct {
	mu      sync.Mutex
	tried   bool
	why     string // why it could not start; empty once started
	counter *cupti.Counter
	led     *accounting.Ledger // the ledger its figures go to
	last    cupti.Totals       // the totals at the last flush
}

// reportManaged starts the process's migration counter for led, the
// ledger of a device making a managed allocation, once.
func reportManaged(led *accounting.Ledger) {
	m := &umCounter
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.tried {
		m.tried = true
		lib, err := cupti.Open()
		if err == nil {
			m.counter, err = lib.Start()
		}
		if err != nil {
			m.why = err.Error()
		} else {
			m.led = led
		}
	}
	switch {
	case m.why != "":
		led.SetMigrationsUncounted(m.why)
	case led != m.led:
		led.SetMigrationsUncounted("CUPTI counts for the whole process, and its figures go to the ledger of the device that first allocated managed memory")
	}
}

// flushManaged has CUPTI deliver what it counted and records in led what
// moved since the last flush, when led is the ledger the counter reports
// to. CUPTI delivers completed work only: the caller has synchronized.
func flushManaged(led *accounting.Ledger) {
	m := &umCounter
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counter == nil || led != m.led {
		return
	}
	t, err := m.counter.Flush()
	if err != nil && !errors.Is(err, cupti.ErrStopped) {
		led.SetMigrationsUncounted("CUPTI's flush failed: " + err.Error())
		return
	}
	recordMigrations(led, m.last, t)
	m.last = t
}
