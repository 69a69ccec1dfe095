package accounting

// cachedSource is a caching pool's own count of the bytes of one kind that
// it holds without handing them out (AddCachedSource).
type cachedSource struct {
	kind  Kind
	bytes func() int64
}

// AddCachedSource makes the ledger's snapshots (Snapshot, Scope.Pop) add
// bytes() to the cached bytes of kind k, as if the pool had called
// AddCached at every change: a pool that counts its cached bytes under its
// own lock registers them once (package pool does, while it holds memory
// from the device), where AddCached would put an atomic add on every
// allocation and free. The returned remove takes the source off again; it
// may be called more than once.
//
// Snapshots call bytes outside the ledger's own locks, before they stop
// recording, so bytes may take the pool's lock while the pool records
// allocations into this ledger under it. bytes must not take a snapshot
// of this ledger or pop one of its scopes, and no code may take one while
// holding a lock that bytes takes (a recording's writer can run under the
// pool's lock: Record says so). A nil ledger or an invalid kind registers
// nothing.
func (l *Ledger) AddCachedSource(k Kind, bytes func() int64) (remove func()) {
	if l == nil || k >= NumKinds || bytes == nil {
		return func() {}
	}
	src := &cachedSource{kind: k, bytes: bytes}
	l.sourcesMu.Lock()
	defer l.sourcesMu.Unlock()
	var list []*cachedSource
	if old := l.sources.Load(); old != nil {
		list = append(list, *old...)
	}
	list = append(list, src)
	l.sources.Store(&list)
	return func() { l.removeCachedSource(src) }
}

// removeCachedSource takes src off the ledger's sources, if it is there.
func (l *Ledger) removeCachedSource(src *cachedSource) {
	l.sourcesMu.Lock()
	defer l.sourcesMu.Unlock()
	old := l.sources.Load()
	if old == nil {
		return
	}
	list := make([]*cachedSource, 0, len(*old))
	for _, s := range *old {
		if s != src {
			list = append(list, s)
		}
	}
	if len(list) == 0 {
		l.sources.Store(nil)
		return
	}
	l.sources.Store(&list)
}

// sourcedCached returns, per kind, the bytes the registered sources report.
// The caller must not hold the ledger frozen (see AddCachedSource).
func (l *Ledger) sourcedCached() (cached [NumKinds]int64) {
	list := l.sources.Load()
	if list == nil {
		return cached
	}
	for _, s := range *list {
		cached[s.kind] += s.bytes()
	}
	return cached
}
