package sim

// streamcheck_clock.go: the vector clocks of the stream race checker
// (check=streams). Each thread of control — every stream, each OS
// thread's per-thread default stream, and the host — is a lane with a
// number; a clock holds, for each lane, how many of that lane's
// operations are known to come before.

// vclock is a vector clock indexed by lane number; missing entries are 0.
type vclock []uint32

// get returns the clock's entry for lane l.
func (c vclock) get(l int32) uint32 {
	if int(l) < len(c) {
		return c[l]
	}
	return 0
}

// join raises c to at least o in every lane and returns it (it may grow).
func (c vclock) join(o vclock) vclock {
	if len(o) > len(c) {
		c = append(c, make(vclock, len(o)-len(c))...)
	}
	for i, v := range o {
		if v > c[i] {
			c[i] = v
		}
	}
	return c
}

// tick advances lane l's own entry and returns the new value.
func (c *vclock) tick(l int32) uint32 {
	if int(l) >= len(*c) {
		*c = append(*c, make(vclock, int(l)+1-len(*c))...)
	}
	(*c)[l]++
	return (*c)[l]
}

// clone returns a copy of c.
func (c vclock) clone() vclock { return append(vclock(nil), c...) }

// lane is one thread of control of the checker.
type lane struct {
	id    int32
	name  string // "stream 0x100", "the legacy default stream", "the host"
	clock vclock
	// legacy is the legacy default stream: its work waits for the work
	// queued before it on every blocking stream, and theirs for its.
	legacy bool
	// blocking is a stream that orders with the legacy default stream
	// (cuStreamCreate's default flags, and per-thread default streams);
	// false for CU_STREAM_NON_BLOCKING streams and the host.
	blocking bool
}
