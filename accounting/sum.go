package accounting

// Sum adds snapshots of different ledgers (the devices of the ranks of a
// job across processes, say) into one: counts, bytes and times add, and
// so do Current, Peak, Cached and Limit, so that the sum's Peak is the
// most memory the ledgers' devices held at once at most (each at its own
// peak). Base is 0. The sum is named name and taken when the latest of
// the snapshots was.
func Sum(name string, snaps ...Snapshot) Snapshot {
	t := Snapshot{Name: name}
	for _, s := range snaps {
		if s.Taken.After(t.Taken) {
			t.Taken = s.Taken
		}
		for k := range t.Kinds {
			a, b := &t.Kinds[k], s.Kinds[k]
			a.Current += b.Current
			a.Peak += b.Peak
			a.Allocs += b.Allocs
			a.Frees += b.Frees
			a.Allocated += b.Allocated
			a.Freed += b.Freed
			a.Failed += b.Failed
			a.Cached += b.Cached
			a.Limit += b.Limit
		}
		for d := range t.Copies {
			for p := range t.Copies[d] {
				t.Copies[d][p] = addCopy(t.Copies[d][p], s.Copies[d][p])
			}
		}
		t.Memsets = addCopy(t.Memsets, s.Memsets)
		t.Kernels = addKernels(t.Kernels, s.Kernels)
	}
	return t
}

func addCopy(x, y CopyStats) CopyStats {
	return CopyStats{Count: x.Count + y.Count, Bytes: x.Bytes + y.Bytes, Seconds: x.Seconds + y.Seconds}
}
