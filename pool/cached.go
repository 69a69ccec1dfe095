package pool

// The ledger's cached bytes (accounting.Snapshot's Cached) count the
// device memory the pool holds without handing it out: Reserved - InUse.
// The pool does not add every change to the ledger (an atomic add on each
// allocation and free, a sixth of the fast path's time); while it holds a
// segment it registers cachedBytes with the ledger
// (Ledger.AddCachedSource), which snapshots ask, and it takes it off
// when it gives its last segment back. A pool that holds nothing is not
// referenced by the ledger, so one dropped without Release is collected.
//
// Once the device is closed, its Close has freed the segments (in the
// ledger too): the pool caches nothing any more, whatever its Stats still
// say, and Trim or Release, which cannot give the segments back, take the
// source off, so that the pool, dropped, is collected.

// cachedBytes returns the bytes the pool holds from the device and has not
// handed out, under the pool's lock: what the ledger's snapshots count as
// the pool's cached bytes; 0 once the device is closed.
func (p *Pool) cachedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed() {
		return 0
	}
	return p.st.Reserved - p.st.InUse
}

// dropSourceIfClosed takes the pool's cached bytes off the ledger when the
// device is closed: its segments cannot be given back, and went with the
// device's memory. The caller holds p.mu.
func (p *Pool) dropSourceIfClosed() {
	if p.dropSource != nil && p.closed() {
		p.dropSource()
		p.dropSource = nil
	}
}
