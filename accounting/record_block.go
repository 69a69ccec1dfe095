package accounting

// A caching allocator (package pool) takes segments from the device and
// cuts them into blocks: the ledger counts the segments, since that is
// what the device gave up, but a recording (Record) should say what the
// program asked for. These three calls tell a recording about the blocks;
// they count nothing in the ledger and, while no recording is open, cost
// one atomic load. ReadLog marks the segments and the blocks, so that a
// replay can allocate the blocks (through a pool of its own, or not) and
// leave the recorded segments out.

// NoteBlockAlloc tells the ledger's recording, if one is open, that a
// caching allocator handed out the block of n bytes of kind k at addr (the
// size the program asked for) for work on the stream with the given handle
// (0: the default stream, or not known).
func (l *Ledger) NoteBlockAlloc(k Kind, addr uintptr, n int64, stream uintptr) {
	if l == nil || k >= NumKinds {
		return
	}
	if r := l.rec.Load(); r != nil {
		r.alloc(k, addr, n, stream, true)
	}
}

// NoteBlockFree tells the ledger's recording, if one is open, that the
// block of n bytes of kind k at addr went back to its caching allocator,
// freed on the stream with the given handle (0: the default stream, or not
// known). n is used only for a block handed out before the recording began.
func (l *Ledger) NoteBlockFree(k Kind, addr uintptr, n int64, stream uintptr) {
	if l == nil || k >= NumKinds {
		return
	}
	if r := l.rec.Load(); r != nil {
		r.free(k, addr, n, stream, true)
	}
}

// NoteSegment tells the ledger's recording, if one is open, that the live
// allocation of kind k at addr, just counted by the device, is a caching
// allocator's segment: its blocks, reported with NoteBlockAlloc, are what
// the program asked for.
func (l *Ledger) NoteSegment(k Kind, addr uintptr) {
	if l == nil || k >= NumKinds {
		return
	}
	if r := l.rec.Load(); r != nil {
		r.segment(k, addr)
	}
}
