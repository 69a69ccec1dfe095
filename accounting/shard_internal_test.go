package accounting

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// A shard fills whole pairs of cache lines, and a line or more of padding
// separates one shard's counters from the next one's.
func TestShardLayout(t *testing.T) {
	var s shard
	assert.Equal(t, unsafe.Sizeof(shardHead{}), unsafe.Offsetof(s.c), "shardHead is the fields before the counts")
	assert.Zero(t, unsafe.Sizeof(s)%128, "a shard is %d bytes", unsafe.Sizeof(s))
	assert.GreaterOrEqual(t, unsafe.Sizeof(s)-unsafe.Offsetof(s.c)-unsafe.Sizeof(s.c), uintptr(64))
	var l Ledger
	for k := range l.levels {
		lv := &l.levels[k]
		cur, cached, peak := uintptr(unsafe.Pointer(&lv.current)), uintptr(unsafe.Pointer(&lv.cached)), uintptr(unsafe.Pointer(&lv.peak))
		assert.GreaterOrEqual(t, cached-cur, uintptr(64), "current and cached of %v share no line", Kind(k))
		assert.GreaterOrEqual(t, peak-cached, uintptr(64), "cached and peak of %v share no line", Kind(k))
	}
	assert.GreaterOrEqual(t, uintptr(unsafe.Pointer(&l.levels[0].current))-uintptr(unsafe.Pointer(&l.overflowMu)), uintptr(64),
		"the read-mostly fields share no line with the first kind's current")
}

// A P past the shards records into the overflow shard, and its counts are
// summed with the others.
func TestOverflowShard(t *testing.T) {
	var l Ledger
	set := l.shardSet()
	i, s := l.enterOverflow(set)
	assert.Equal(t, len(set)-1, i)
	assert.True(t, s.overflow)
	s.c.memsets.add(5, 0)
	l.leave(s)
	l.RecordMemset(7, 0)
	m := l.Snapshot().Memsets
	assert.Equal(t, int64(2), m.Count)
	assert.Equal(t, int64(12), m.Bytes)
}
