package devarray

// Backend is what a DevArray needs from a device: allocate, free and move
// bytes. device.Device satisfies it; the device counts every call in its
// ledger, so devarray itself needs no accounting. Pointers passed to a Backend
// are addresses in its own device's memory.
type Backend interface {
	// DeviceID returns the device whose memory this backend manages.
	DeviceID() DeviceID
	// Malloc allocates nbytes of device memory.
	Malloc(nbytes int64) (Ptr, error)
	// Free frees memory returned by Malloc.
	Free(p Ptr) error
	// Memset sets nbytes at dst to value.
	Memset(dst Ptr, value byte, nbytes int64) error
	// CopyHtoD copies len(src) bytes from host to device.
	CopyHtoD(dst Ptr, src []byte) error
	// CopyDtoH copies len(dst) bytes from device to host.
	CopyDtoH(dst []byte, src Ptr) error
	// Memcpy2D copies Height rows of Width bytes between pitched regions.
	Memcpy2D(p Memcpy2D) error
}

// Place is one side of a 2-D copy: device memory (Dev) or host memory (Host).
// Exactly one of the two is set.
type Place struct {
	Dev  Ptr
	Host []byte
}

// OnHost reports whether the place is host memory.
func (p Place) OnHost() bool { return p.Host != nil }

// Memcpy2D describes a pitched copy, like the driver's CUDA_MEMCPY2D: Height
// rows of Width bytes, row i of the source at Src + i*SrcPitch and of the
// destination at Dst + i*DstPitch. Pitches are at least Width.
type Memcpy2D struct {
	Dst, Src           Place
	DstPitch, SrcPitch int64
	Width, Height      int64
}

// Memcpy3D describes a copy of Depth slices of Height rows of Width bytes,
// like the driver's CUDA_MEMCPY3D: row y of slice z starts at
// z*Pitch*Height' + y*Pitch on each side, where Height' is that side's
// slice height (DstHeight, SrcHeight), at least Height.
type Memcpy3D struct {
	Dst, Src             Place
	DstPitch, SrcPitch   int64
	DstHeight, SrcHeight int64
	Width, Height, Depth int64
}
