package transfer

// Options tune a Copier; the zero value of each field means its default.
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
// spread over streams streams. Zero keeps a default.
func WithRing(chunkBytes int64, chunks, streams int) Option {
	return func(o *Options) {
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
func WithOptions(opts Options) Option { return func(o *Options) { *o = opts } }

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

func apply(base Options, opts []Option) Options {
	for _, f := range opts {
		f(&base)
	}
	return base.withDefaults()
}
