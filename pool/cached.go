package pool

// The ledger's cached bytes (accounting.Snapshot's Cached) count the
// device memory the pool holds without handing it out: Reserved - InUse.
// The pool does not add every change to the ledger (an atomic add on each
// allocation and free, a sixth of the fast path's time); while it holds a
// segment it registers cachedBytes with the ledger
// (Ledger.AddCachedSource), which snapshots ask, and it takes it off
// when it gives its last segment back. A pool that holds nothing is not
// referenced by the ledger, so one dropped without Release is collected.

// cachedBytes returns the bytes the pool holds from the device and has not
// handed out, under the pool's lock: what the ledger's snapshots count as
// the pool's cached bytes.
func (p *Pool) cachedBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st.Reserved - p.st.InUse
}
