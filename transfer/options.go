package transfer

import (
	"fmt"

	"github.com/cuarray/cuarray/device/driver"
)

// Options tune a Copier; the zero value of each field means its default,
// and a negative value is an error (driver.ErrInvalidValue) from New or
// the copy it is given to.
type Options struct {
	// Path forces a path; PathAuto (the default) lets the planner choose.
	Path Path
	// ChunkBytes is the size of one pinned staging chunk (default 4 MiB;
	// SimChunkBytes on sim).
	ChunkBytes int64
	// Chunks is the number of chunks in the staging ring, and of goroutines
	// that fill and drain them (default 4).
	Chunks int
	// Streams is the number of streams the staged path spreads its DMA over (default 2).
	Streams int
	// StagedMin is the smallest pageable copy the planner stages on a GPU
	// (default 1 MiB); below it the driver's own copy is quicker to start.
	StagedMin int64

	bad error // the first invalid value an Option was given
}

// The defaults.
const (
	DefaultChunkBytes = 4 << 20
	DefaultChunks     = 4
	DefaultStreams    = 2
	DefaultStagedMin  = 1 << 20
	// SimChunkBytes is the chunk size on sim, where it fits the CPU's cache.
	SimChunkBytes = 512 << 10
)

// Option changes Options.
type Option func(*Options)

// Via forces path p (PathAuto: the planner chooses).
func Via(p Path) Option { return func(o *Options) { o.Path = p } }

// WithRing sets the staging ring: chunks of chunkBytes each, their DMA
// spread over streams streams. Zero keeps a default; a negative value is
// an error.
func WithRing(chunkBytes int64, chunks, streams int) Option {
	return func(o *Options) {
		if chunkBytes < 0 || chunks < 0 || streams < 0 {
			o.invalid(fmt.Errorf("transfer: ring of %d chunks of %d bytes on %d streams: want no negative value: %w",
				chunks, chunkBytes, streams, driver.ErrInvalidValue))
			return
		}
		if chunkBytes > 0 {
			o.ChunkBytes = chunkBytes
		}
		if chunks > 0 {
			o.Chunks = chunks
		}
		if streams > 0 {
			o.Streams = streams
		}
	}
}

// WithOptions replaces the options wholesale (zero fields take defaults).
func WithOptions(opts Options) Option {
	return func(o *Options) {
		bad := o.bad
		*o = opts
		if o.bad == nil {
			o.bad = bad
		}
		if opts.ChunkBytes < 0 || opts.Chunks < 0 || opts.Streams < 0 || opts.StagedMin < 0 {
			o.invalid(fmt.Errorf("transfer: options %+v: want no negative value: %w", opts, driver.ErrInvalidValue))
		}
	}
}

// invalid keeps the first invalid value's error.
func (o *Options) invalid(err error) {
	if o.bad == nil {
		o.bad = err
	}
}

func (o Options) withDefaults() Options {
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = DefaultChunkBytes
	}
	if o.Chunks <= 0 {
		o.Chunks = DefaultChunks
	}
	if o.Streams <= 0 {
		o.Streams = DefaultStreams
	}
	o.Streams = min(o.Streams, o.Chunks)
	if o.StagedMin <= 0 {
		o.StagedMin = DefaultStagedMin
	}
	return o
}

// apply returns base changed by opts, with defaults filled in, or the
// error of the first invalid value.
func apply(base Options, opts []Option) (Options, error) {
	for _, f := range opts {
		if f != nil {
			f(&base)
		}
	}
	if base.bad != nil {
		return Options{}, base.bad
	}
	return base.withDefaults(), nil
}
