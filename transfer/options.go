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
	// ChunkBytes is the size of one pinned staging chunk (default: the
	// profile's ring, else 4 MiB, less when the ring is deep; SimChunkBytes
	// on sim). A ring the Copier sizes itself fills each chunk only in
	// part when a copy is too small to go round the ring a few times.
	ChunkBytes int64
	// Chunks is the number of chunks in the staging ring (default: the
	// profile's ring, else as many as the goroutines the host's memory
	// copy needs to feed the link, at most GOMAXPROCS, plus two; see
	// Profile.HostCopy). Those goroutines fill (or drain) one chunk
	// together, and its DMA starts as soon as it is full, while they fill
	// the next.
	Chunks int
	// Streams is the number of streams the staged path spreads its DMA
	// over (default 2): chunk i on stream i mod Streams. A copy waits on
	// the streams that carried its chunks. On one stream the DMAs
	// complete in chunk order, the order the host copies take them in; on
	// several, sim's "DMA" (a memory copy) runs on as many goroutines.
	Streams int
	// StagedMin, when set, is the smallest pageable copy the planner
	// stages; by default the cost model alone decides (Profile).
	StagedMin int64
	// Profile is the planner's cost model (default: ProfileFor the device).
	Profile *Profile
	// RegisterBytes bounds the bytes of Go memory a Copier keeps
	// registered for the registered path (default DefaultRegisterBytes);
	// it is the Copier's, read by New. See WithRegisterCache.
	RegisterBytes int64

	reg *regCache // the Copier's registrations, for the planner

	adapt bool  // the ring was sized by the Copier: chunks may be filled in part
	bad   error // the first invalid value an Option was given
}

// The defaults.
const (
	DefaultChunkBytes = 4 << 20
	DefaultChunks     = 4
	DefaultStreams    = 2
	// SimChunkBytes is the chunk size on sim, where it fits the CPU's cache.
	SimChunkBytes = 512 << 10
)

// Option changes Options.
type Option func(*Options)

// WithProfile makes the planner use profile p (nil: the device's, see
// ProfileFor); a profile that does not pass Validate is an error.
func WithProfile(p *Profile) Option {
	return func(o *Options) {
		if p != nil {
			if err := p.Validate(); err != nil {
				o.invalid(err)
				return
			}
		}
		o.Profile = p
	}
}

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

// WithRegisterCache bounds the bytes of Go memory a Copier keeps
// registered for the registered path (PathRegistered): once registered,
// a buffer stays registered, and pinned, for later copies until the least
// recently used registrations must make room, Copier.Unregister releases
// it, or the Copier is closed. A buffer the bound has no room for is
// registered for its copy only (copies of it that run at once share that
// registration). Given to New; a negative bound is an
// error.
func WithRegisterCache(maxBytes int64) Option {
	return func(o *Options) {
		if maxBytes < 0 {
			o.invalid(fmt.Errorf("transfer: register cache of %d bytes: want no negative value: %w", maxBytes, driver.ErrInvalidValue))
			return
		}
		o.RegisterBytes = maxBytes
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
		if opts.ChunkBytes < 0 || opts.Chunks < 0 || opts.Streams < 0 || opts.StagedMin < 0 || opts.RegisterBytes < 0 {
			o.invalid(fmt.Errorf("transfer: options %+v: want no negative value: %w", opts, driver.ErrInvalidValue))
		}
		if opts.Profile != nil {
			if err := opts.Profile.Validate(); err != nil {
				o.invalid(err)
			}
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
	if o.RegisterBytes <= 0 {
		o.RegisterBytes = DefaultRegisterBytes
	}
	return o
}

// apply returns base changed by opts, with defaults filled in, or the
// error of the first invalid value.
func apply(base Options, opts []Option) (Options, error) {
	o, err := collect(base, opts)
	if err != nil {
		return Options{}, err
	}
	return o.withDefaults(), nil
}

// collect returns base changed by opts, or the error of the first invalid value.
func collect(base Options, opts []Option) (Options, error) {
	for _, f := range opts {
		if f != nil {
			f(&base)
		}
	}
	if base.bad != nil {
		return Options{}, base.bad
	}
	return base, nil
}
