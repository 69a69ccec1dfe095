package pool

// Stats are a pool's figures at one moment (PyTorch's memory_stats, RMM's
// statistics adaptor).
type Stats struct {
	InUse        int64   // bytes handed out
	Reserved     int64   // bytes held from the device: in use plus cached
	Cached       int64   // bytes held but not handed out (free and pending)
	PeakInUse    int64   // highest InUse
	PeakReserved int64   // highest Reserved
	Limit        int64   // the limit on InUse; 0 when none
	ReserveRatio float64 // the bound on Reserved / PeakInUse the pool keeps when it grows; 0 when none

	Allocs     int64 // allocations served
	Frees      int64 // blocks returned
	FromCache  int64 // allocations served from cached blocks
	FromDevice int64 // allocations that needed a new segment
	OOMRetries int64 // times the device ran out and the cache was freed to retry
	Released   int64 // segments given back to the device (Trim, Release, the reserve ratio, OOM retries)

	Segments      int   // device allocations held
	LiveBlocks    int   // blocks handed out
	FreeBlocks    int   // cached blocks ready for any stream
	PendingBlocks int   // cached blocks waiting for their stream's event
	LargestFree   int64 // the largest free block
	// Fragmentation is 1 - LargestFree/free bytes: 0 when the free cache
	// is one block (or empty), near 1 when it is in many small pieces.
	Fragmentation float64
}

// Stats returns the pool's figures.
func (p *Pool) Stats() Stats {
	if p.valid() != nil {
		return Stats{}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unpark() // parked blocks are reported as the free blocks they are
	s := p.st
	s.Cached = s.Reserved - s.InUse
	s.Limit = p.limit
	s.ReserveRatio = p.ratio
	s.LiveBlocks = p.liveBlocks
	s.FreeBlocks = p.free[0].n + p.free[1].n
	s.PendingBlocks = len(p.pending)
	s.LargestFree = max(p.free[0].largest(), p.free[1].largest())
	freeBytes := p.free[0].bytes + p.free[1].bytes
	if freeBytes > 0 {
		s.Fragmentation = 1 - float64(s.LargestFree)/float64(freeBytes)
	}
	return s
}
