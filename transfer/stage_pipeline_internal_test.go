package transfer

import (
	"fmt"
	rand "github.com/cuarray/cuarray/internal/testrand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cuarray/cuarray/accounting"
	"github.com/cuarray/cuarray/devarray"
	"github.com/cuarray/cuarray/device"
	"github.com/cuarray/cuarray/device/driver"
	"github.com/cuarray/cuarray/internal/testdev"
)

// stageRecorder keeps the moments a staged copy's trace reports, per chunk.
type stageRecorder struct {
	mu    sync.Mutex
	at    map[int]*[4]time.Time
	count map[int]*[4]int
}

func newStageRecorder() *stageRecorder {
	return &stageRecorder{at: map[int]*[4]time.Time{}, count: map[int]*[4]int{}}
}

func (r *stageRecorder) add(ci int, step stageStep) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at[ci] == nil {
		r.at[ci], r.count[ci] = new([4]time.Time), new([4]int)
	}
	r.at[ci][step] = now
	r.count[ci][step]++
}

// when returns when chunk ci took step.
func (r *stageRecorder) when(ci int, step stageStep) time.Time { return r.at[ci][step] }

// The staged ring pipelines. On sim with a modelled link of 0.02 GB/s, a
// 1 MiB chunk's DMA takes 52 ms, many times its host copy and longer
// than a goroutine of a busy machine waits for a core. With the workers
// a Copier takes (GOMAXPROCS on sim) and with one:
//
//   - Towards the device, the first DMA is queued once one chunk is
//     gathered: no other chunk's gather had ended, and no chunk past the
//     second had begun (the workers that finished their parts of the
//     first chunk early take the next one's while the last part is
//     copied and the DMA queued). A ring whose goroutines each filled a
//     chunk of its own had begun all 3 slots' chunks by then.
//   - With one worker and one stream, chunk by chunk: the gather of
//     chunk i+1 overlaps the DMA of chunk i (it begins before that DMA
//     completes and ends after it was queued); the scatter of chunk i
//     begins after the DMA of chunk i+1 was queued, and overlaps it for
//     one chunk at least (every chunk but on a machine whose wake-ups
//     come later than a DMA's 52 ms). With several workers, the parts are
//     taken in chunk order but a chunk whose worker waits for a core ends
//     after the next: on a machine as loaded as the one this was written
//     on (load 8 on 2 cores), often enough that the pairs are not
//     asserted there; on several streams, sim's link takes the DMAs of
//     chunks queued together in either order.
//
// Each step happens once a chunk, a chunk's DMA is queued after its
// gather and its scatter begins after its DMA was queued, the data
// arrives whole, and the ledger counts a DMA and a host copy per chunk,
// as before. With the stream race checker on too.
func TestStagedPipelines(t *testing.T) {
	const chunk, slots = 1 << 20, 3
	simProfile := DefaultProfile(driver.Info{Backend: "sim", Model: "sim"})
	oneWorker := simProfile.clone()
	oneWorker.HostCopy = []HostCopy{{Threads: 1, GBps: 1000}} // one goroutine outruns the link
	require.Equal(t, 1, ringWorkers(oneWorker, 16))
	for _, spec := range []string{"sim:0?mem=64MiB&link=0.02", "sim:0?mem=64MiB&link=0.02&check=streams"} {
		for _, w := range []struct {
			name    string
			profile *Profile
			one     bool
			streams int
		}{{"the copier's workers on 2 streams", simProfile, false, 2}, {"one worker on one stream", oneWorker, true, 1}} {
			t.Run(spec+"/"+w.name, func(t *testing.T) {
				stagedPipelines(t, spec, w.profile, w.one, chunk, slots, w.streams)
			})
		}
	}
}

func stagedPipelines(t *testing.T, spec string, profile *Profile, one bool, chunk, slots, streams int) {
	dev, err := device.Open(spec)
	require.NoError(t, err)
	defer func() { require.NoError(t, dev.Close()) }()
	c, err := New(dev, WithRing(int64(chunk), slots, streams), WithProfile(profile))
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	nchunks := 5 + rand.IntN(3)
	// The last chunk is half a chunk to whole: its DMA outlasts the
	// scatter before it.
	n := (nchunks-1)*chunk + chunk/2 + rand.IntN(chunk/2+1)
	src := testdev.RandomBytes(n)
	a, err := devarray.Empty(dev, devarray.Uint8, n)
	require.NoError(t, err)
	defer func() { require.NoError(t, a.Free()) }()
	back := make([]byte, n)
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		t.Run(fmt.Sprintf("%v %d bytes", dir, n), func(t *testing.T) {
			rec := newStageRecorder()
			c.trace = rec.add
			defer func() { c.trace = nil }()
			dst, s := Dev(a), HostBytes(src, devarray.Uint8)
			if dir == accounting.DtoH {
				dst, s = HostBytes(back, devarray.Uint8), Dev(a)
			}
			before := dev.Ledger().Snapshot()
			require.NoError(t, c.Copy(dst, s, Via(PathStaged)))
			diff := accounting.Diff(before, dev.Ledger().Snapshot())
			assert.Equal(t, int64(nchunks), diff.Copies[dir][accounting.PathStaged].Count, "a DMA per chunk")
			assert.Equal(t, int64(n), diff.Copies[dir][accounting.PathStaged].Bytes)
			assert.Equal(t, int64(nchunks), diff.Copies[accounting.HtoH][accounting.PathStaged].Count, "a host copy per chunk")
			require.Len(t, rec.count, nchunks, "every chunk is traced")
			for ci := range nchunks {
				require.Equal(t, [4]int{1, 1, 1, 1}, *rec.count[ci], "chunk %d: each step once", ci)
			}
			first := 0 // the chunk whose DMA was queued first
			for ci := range nchunks {
				if rec.when(ci, stepDMAQueued).Before(rec.when(first, stepDMAQueued)) {
					first = ci
				}
			}
			t0 := rec.when(first, stepDMAQueued)
			ms := func(ci int, step stageStep) string {
				return fmt.Sprintf("chunk %d's %v at %+.3f ms", ci, step, rec.when(ci, step).Sub(t0).Seconds()*1e3)
			}
			for ci := range nchunks {
				if dir == accounting.HtoD {
					assert.False(t, rec.when(ci, stepDMAQueued).Before(rec.when(ci, stepHostEnd)), "%s follows %s", ms(ci, stepDMAQueued), ms(ci, stepHostEnd))
				} else {
					assert.True(t, rec.when(ci, stepHostStart).After(rec.when(ci, stepDMAQueued)), "%s follows %s", ms(ci, stepHostStart), ms(ci, stepDMAQueued))
				}
			}
			if dir == accounting.HtoD {
				ended, begun := 0, 0
				for ci := range nchunks {
					if rec.when(ci, stepHostEnd).Before(t0) || ci == first {
						ended++
					}
					if rec.when(ci, stepHostStart).Before(t0) {
						begun++
					}
				}
				assert.Equal(t, 1, ended, "gathers that ended before the first DMA was queued (%s)", ms(first, stepDMAQueued))
				assert.LessOrEqual(t, begun, 2, "gathers that began before the first DMA was queued (%s)", ms(first, stepDMAQueued))
			}
			if one {
				var overlapped int
				var late []string
				for ci := range nchunks - 1 {
					if dir == accounting.HtoD {
						assert.True(t, rec.when(ci+1, stepHostStart).Before(rec.when(ci, stepDMADone)), "%s, before %s", ms(ci+1, stepHostStart), ms(ci, stepDMADone))
						assert.True(t, rec.when(ci+1, stepHostEnd).After(rec.when(ci, stepDMAQueued)), "%s, after %s", ms(ci+1, stepHostEnd), ms(ci, stepDMAQueued))
						continue
					}
					// The ring queued chunk i+1's DMA before chunk i's
					// scatter began, so the two may overlap; whether they
					// did in wall time depends on when the worker woke
					// after chunk i's DMA: one wake-up later than a
					// DMA's 52 ms (seen on 2 cores under CI beside
					// other builds) finds chunk i+1's done too. At least
					// one pair must have overlapped.
					assert.True(t, rec.when(ci+1, stepDMAQueued).Before(rec.when(ci, stepHostStart)), "%s, before %s", ms(ci+1, stepDMAQueued), ms(ci, stepHostStart))
					assert.True(t, rec.when(ci, stepHostEnd).After(rec.when(ci+1, stepDMAQueued)), "%s, after %s", ms(ci, stepHostEnd), ms(ci+1, stepDMAQueued))
					if rec.when(ci, stepHostStart).Before(rec.when(ci+1, stepDMADone)) {
						overlapped++
					} else {
						late = append(late, fmt.Sprintf("%s, after %s", ms(ci, stepHostStart), ms(ci+1, stepDMADone)))
					}
				}
				if dir == accounting.DtoH {
					assert.Positive(t, overlapped, "no scatter overlapped the next chunk's DMA:\n%s", strings.Join(late, "\n"))
					if len(late) > 0 {
						t.Logf("%d of %d scatters began after the next chunk's DMA was done (a late wake-up):\n%s", len(late), nchunks-1, strings.Join(late, "\n"))
					}
				}
			}
			if dir == accounting.DtoH {
				require.Equal(t, src, back, "the data made the round trip")
			}
		})
	}
}
