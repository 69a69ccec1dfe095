package transfer

import (
	"slices"

	"github.com/cuarray/cuarray/accounting"
)

// The bounds of a ring the Copier sizes itself.
const (
	maxRingBytes = 64 << 20  // pinned memory of a deep ring
	minChunk     = 1 << 20   // the smallest chunk a deep ring's size is cut to
	minPiece     = 256 << 10 // the least a chunk is filled with (see piece)
	pieceAlign   = 64 << 10
	chunksWanted = 32 // chunks a staged copy is cut into, at least, where minPiece allows
	maxWorkers   = 64 // goroutines a staged copy's host copies run on, at most
)

// sizeRing fills in the ring options the caller left zero: from the
// profile's calibrated ring (Profile.Ring) when it has one, else
// Chunks = ringWorkers + 2 (at least 3: a chunk in DMA, one queued behind
// it and one the workers copy; the host copies may run further ahead of
// the link, as far as the workers are many)
// and chunks of 4 MiB (SimChunkBytes on sim), cut so that the ring holds
// at most 64 MiB. A ring sized here may fill its chunks in part (piece).
func sizeRing(o Options, sim bool, procs int) Options {
	if o.ChunkBytes != 0 && o.Chunks != 0 {
		return o
	}
	shape := RingShape{ChunkBytes: DefaultChunkBytes, Streams: DefaultStreams}
	if sim {
		// sim's "DMA" is a CPU copy: chunks that stay in the CPU's cache
		// let the second copy of each byte read from cache.
		shape.ChunkBytes = SimChunkBytes
	}
	if r := o.Profile.ringOf(); r != nil {
		shape = *r
	} else {
		shape.Chunks = ringWorkers(o.Profile, procs) + 2
		for shape.ChunkBytes > minChunk && shape.ChunkBytes*int64(shape.Chunks) > maxRingBytes {
			shape.ChunkBytes /= 2
		}
	}
	if o.ChunkBytes == 0 {
		o.ChunkBytes = shape.ChunkBytes
		o.adapt = true
	}
	if o.Chunks == 0 {
		o.Chunks = shape.Chunks
	}
	if o.Streams == 0 {
		o.Streams = shape.Streams
	}
	return o
}

func (p *Profile) ringOf() *RingShape {
	if p == nil {
		return nil
	}
	return p.Ring
}

// ringWorkers returns how many goroutines a staged copy's host copies
// need to feed the link (all of them copy each chunk together, see
// pipeline): the fewest, up to procs, whose memory copy rate
// (Profile.HostCopy) reaches the pinned path's bandwidth, else the number
// with the highest rate. Without host copy figures, procs.
func ringWorkers(p *Profile, procs int) int {
	procs = min(max(procs, 1), maxWorkers)
	if p == nil || len(p.HostCopy) == 0 {
		return procs
	}
	link := 0.0
	for _, dir := range []accounting.Direction{accounting.HtoD, accounting.DtoH} {
		if c, ok := p.Cost(PathPinned, dir); ok {
			link = max(link, c.GBps)
		}
	}
	best, bestRate := 1, 0.0
	for t := 1; t <= procs; t++ {
		r := p.hostCopyAt(t)
		if link > 0 && r >= link {
			return t
		}
		if r > bestRate*1.02 { // a rate no more than 2 % better is not worth a goroutine
			best, bestRate = t, r
		}
	}
	return best
}

// hostCopyAt estimates the host's memory copy rate on t goroutines from
// Profile.HostCopy: linear between the figures, from zero at none; past
// the last figure it stays there, but a single figure is taken to scale
// with t.
func (p *Profile) hostCopyAt(t int) float64 {
	hc := slices.Clone(p.HostCopy)
	slices.SortFunc(hc, func(a, b HostCopy) int { return a.Threads - b.Threads })
	if len(hc) == 1 {
		return hc[0].GBps * float64(t) / float64(hc[0].Threads)
	}
	prev := HostCopy{}
	for _, h := range hc {
		if t <= h.Threads {
			return prev.GBps + (h.GBps-prev.GBps)*float64(t-prev.Threads)/float64(h.Threads-prev.Threads)
		}
		prev = h
	}
	return prev.GBps
}

// piece returns how many bytes of an n-byte staged copy each chunk
// holds: the ring's chunk, or, for a ring the Copier sized (adapt), less,
// so that the copy has at least chunksWanted chunks, but no less than
// minPiece. The pipeline's ends are a chunk each (HtoD, the last chunk's
// DMA runs after every host copy; DtoH, the first scatter waits for the
// first chunk's DMA): with that many chunks they are a small part of the copy.
func piece(n, chunk int64, adapt bool) int64 {
	if !adapt {
		return chunk
	}
	want := n / chunksWanted
	want = (want + pieceAlign - 1) / pieceAlign * pieceAlign
	return min(chunk, max(want, minPiece))
}
