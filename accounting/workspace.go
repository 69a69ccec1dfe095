package accounting

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cuarray/cuarray/devarray"
)

// WorkspaceScheme says how a Workspace decides its size, after rocBLAS's
// device memory schemes.
type WorkspaceScheme int

const (
	// WorkspaceDefault grows on demand. Growing frees the old buffer and
	// allocates a larger one, which synchronizes the device, so it belongs
	// outside hot loops: run a query pass and preallocate instead.
	WorkspaceDefault WorkspaceScheme = iota
	// WorkspacePreallocated has the size a query pass found and never grows.
	WorkspacePreallocated
	// WorkspaceManual has the size the user set and is never resized.
	WorkspaceManual
)

func (s WorkspaceScheme) String() string {
	switch s {
	case WorkspaceDefault:
		return "default"
	case WorkspacePreallocated:
		return "preallocated"
	case WorkspaceManual:
		return "manual"
	}
	return fmt.Sprintf("WorkspaceScheme(%d)", int(s))
}

// Workspace errors and query results.
var (
	// ErrWorkspaceBorrowed: the workspace is lent out; one borrow at a time.
	ErrWorkspaceBorrowed = errors.New("workspace already borrowed (release the first borrow before the next)")
	// ErrWorkspaceTooSmall: a preallocated or manual workspace is smaller
	// than the call needs; it never grows.
	ErrWorkspaceTooSmall = errors.New("workspace too small")
	// ErrNotQuerying: Need or StopQuery outside a size query.
	ErrNotQuerying = errors.New("workspace is not in a size query")
	// ErrPerfDegraded is wrapped by a call that succeeded with a slower
	// algorithm because the workspace had room only for that one. It is not
	// fatal: the result is correct. Test with errors.Is.
	ErrPerfDegraded = errors.New("performance degraded: the workspace fits only the slower algorithm")

	// SizeIncreased is what a call in query mode returns when it raised the
	// workspace's running maximum (rocblas_status_size_increased). It is not
	// a failure: the call did not run. Test with IsSizeQuery.
	SizeIncreased = &SizeQueryResult{increased: true}
	// SizeUnchanged is what a call in query mode returns when it needs no
	// more than the running maximum (rocblas_status_size_unchanged).
	SizeUnchanged = &SizeQueryResult{}
)

// SizeQueryResult is the result of a call made in query mode. It is an
// error so that any call can return it, but it reports success.
type SizeQueryResult struct{ increased bool }

func (r *SizeQueryResult) Error() string {
	if r.increased {
		return "workspace size query: size increased"
	}
	return "workspace size query: size unchanged"
}

// IsSizeQuery reports whether err is a query-mode result (SizeIncreased or
// SizeUnchanged), that is, the call only reported its size.
func IsSizeQuery(err error) bool {
	var r *SizeQueryResult
	return errors.As(err, &r)
}

// Workspace is scratch device memory owned by a handle and lent to the calls
// made with it, after rocBLAS's handle-held device memory. Only one borrow
// is alive at a time; a borrow is returned by calling its release function.
// The memory is allocated through the Backend, so the device's ledger
// counts it. A Workspace is safe for concurrent use (borrows still take
// turns). The methods of a nil Workspace (but Free, a no-op), and the
// allocations of one without a backend (NewWorkspace(nil), a zero
// Workspace), return ErrNil.
type Workspace struct {
	b devarray.Backend

	mu       sync.Mutex
	scheme   WorkspaceScheme
	ptr      devarray.Ptr
	size     int64 // bytes allocated at ptr; 0: none
	borrowed bool
	querying bool
	query    int64 // running maximum of the query, rounded up
	grows    int
}

// NewWorkspace returns an empty workspace with the default scheme; it
// allocates nothing until the first borrow.
func NewWorkspace(b devarray.Backend) *Workspace { return &Workspace{b: b} }

// Scheme returns the workspace's scheme.
func (w *Workspace) Scheme() WorkspaceScheme {
	if w == nil {
		return WorkspaceDefault
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.scheme
}

// Size returns the bytes the workspace holds now.
func (w *Workspace) Size() int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.size
}

// Grows returns how many times the default scheme grew the buffer, each of
// which synchronized the device.
func (w *Workspace) Grows() int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.grows
}

// StartQuery puts the workspace in query mode: calls made with it report
// the bytes they need through Need and do not run.
func (w *Workspace) StartQuery() error {
	if w == nil {
		return fmt.Errorf("accounting: start workspace query: %w", ErrNil)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.borrowed {
		return fmt.Errorf("accounting: start workspace query: %w", ErrWorkspaceBorrowed)
	}
	w.querying, w.query = true, 0
	return nil
}

// Querying reports whether the workspace is in query mode. A call checks it
// first and, when true, returns Need's result instead of running.
func (w *Workspace) Querying() bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.querying
}

// Need records that a call needs n bytes, rounded up to Granularity, and
// returns SizeIncreased when that raised the running maximum, else
// SizeUnchanged. Outside query mode it returns ErrNotQuerying.
func (w *Workspace) Need(n int64) error {
	if w == nil {
		return fmt.Errorf("accounting: workspace need %d bytes: %w", n, ErrNil)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.querying {
		return ErrNotQuerying
	}
	if n < 0 || AlignUp(n) < 0 {
		return fmt.Errorf("accounting: workspace need %d bytes: %w", n, ErrInvalidArgument)
	}
	if a := AlignUp(n); a > w.query {
		w.query = a
		return SizeIncreased
	}
	return SizeUnchanged
}

// StopQuery ends query mode and returns the largest size the calls needed.
func (w *Workspace) StopQuery() (int64, error) {
	if w == nil {
		return 0, fmt.Errorf("accounting: stop workspace query: %w", ErrNil)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.querying {
		return 0, ErrNotQuerying
	}
	w.querying = false
	return w.query, nil
}

// Preallocate ends a query and allocates the size it found, switching to
// the preallocated scheme: the workspace never grows after this. It returns
// the size.
func (w *Workspace) Preallocate() (int64, error) {
	size, err := w.StopQuery()
	if err != nil {
		return 0, fmt.Errorf("accounting: preallocate workspace: %w", err)
	}
	return size, w.setSize(size, WorkspacePreallocated)
}

// SetManual sets the workspace to exactly size bytes (rounded up) that the
// user chose; it is never resized after this. SetManual(0) frees the
// memory and returns to the default scheme.
func (w *Workspace) SetManual(size int64) error {
	if w == nil {
		return fmt.Errorf("accounting: set workspace size: %w", ErrNil)
	}
	if size < 0 || AlignUp(size) < 0 {
		return fmt.Errorf("accounting: workspace size %d: %w", size, ErrInvalidArgument)
	}
	if size == 0 {
		return w.setSize(0, WorkspaceDefault)
	}
	return w.setSize(size, WorkspaceManual)
}

func (w *Workspace) setSize(size int64, scheme WorkspaceScheme) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.borrowed {
		return fmt.Errorf("accounting: resize workspace: %w", ErrWorkspaceBorrowed)
	}
	if err := w.resize(AlignUp(size)); err != nil {
		w.scheme = WorkspaceDefault
		return err
	}
	w.scheme = scheme
	return nil
}

// resize frees the buffer and allocates size bytes (none for 0). The
// device synchronizes first, as the old buffer may be in use by queued
// work. When the synchronize or the free fails (after a device fault
// every call does), the workspace keeps the old buffer, which a later
// Free, or the device's Close, frees; when the allocation fails it holds
// nothing. w.mu is held.
func (w *Workspace) resize(size int64) error {
	if size == w.size {
		return nil
	}
	if w.b == nil {
		return fmt.Errorf("accounting: workspace without a backend (make it with NewWorkspace): %w", ErrNil)
	}
	if w.size > 0 {
		if s, ok := w.b.(interface{ Synchronize() error }); ok {
			if err := s.Synchronize(); err != nil {
				return fmt.Errorf("accounting: workspace: synchronize before resize: %w", err)
			}
		}
		if err := w.b.Free(w.ptr); err != nil {
			return fmt.Errorf("accounting: workspace: free %s: %w", FormatBytes(w.size), err)
		}
		w.ptr, w.size = 0, 0
	}
	if size == 0 {
		return nil
	}
	p, err := w.b.Malloc(size)
	if err != nil {
		return fmt.Errorf("accounting: workspace of %s: %w", FormatBytes(size), err)
	}
	w.ptr, w.size = p, size
	return nil
}

// Borrow lends n bytes of the workspace until release is called (call it
// with defer; calling it twice is harmless). The default scheme grows the
// buffer when it is smaller than n; the others fail with
// ErrWorkspaceTooSmall. A second borrow while one is alive fails with
// ErrWorkspaceBorrowed; so does a borrow in query mode, where calls must
// not run.
func (w *Workspace) Borrow(n int64) (devarray.Ptr, func(), error) {
	p, _, release, err := w.BorrowRange(n, n)
	return p, release, err
}

// BorrowRange lends at least minBytes and, when it can, wantBytes bytes, for a call
// that has a faster algorithm needing wantBytes and a slower one needing
// minBytes. It returns the bytes lent: below wantBytes, the call should run the slower
// algorithm and return an error wrapping ErrPerfDegraded. The default scheme
// grows to wantBytes, and when the device has no room for that, to
// minBytes.
func (w *Workspace) BorrowRange(minBytes, wantBytes int64) (devarray.Ptr, int64, func(), error) {
	if w == nil {
		return 0, 0, nil, fmt.Errorf("accounting: borrow workspace: %w", ErrNil)
	}
	if minBytes < 0 || wantBytes < minBytes || AlignUp(wantBytes) < 0 {
		return 0, 0, nil, fmt.Errorf("accounting: borrow workspace %d..%d bytes: %w", minBytes, wantBytes, ErrInvalidArgument)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.borrowed:
		return 0, 0, nil, ErrWorkspaceBorrowed
	case w.querying:
		return 0, 0, nil, fmt.Errorf("accounting: borrow workspace in query mode: call Need instead: %w", ErrInvalidArgument)
	}
	if w.size < AlignUp(wantBytes) {
		if err := w.grow(minBytes, wantBytes); err != nil {
			return 0, 0, nil, err
		}
	}
	w.borrowed = true
	var once sync.Once
	release := func() {
		once.Do(func() {
			w.mu.Lock()
			w.borrowed = false
			w.mu.Unlock()
		})
	}
	return w.ptr, min(w.size, AlignUp(wantBytes)), release, nil
}

// grow makes the buffer at least wantBytes, else at least minBytes, as
// the scheme allows. w.mu is held and the buffer is smaller than wantBytes.
func (w *Workspace) grow(minBytes, wantBytes int64) error {
	if w.scheme != WorkspaceDefault {
		if w.size >= AlignUp(minBytes) {
			return nil // the slower algorithm fits
		}
		return fmt.Errorf("accounting: %s workspace holds %s, the call needs at least %s: %w",
			w.scheme, FormatBytes(w.size), FormatBytes(AlignUp(minBytes)), ErrWorkspaceTooSmall)
	}
	old := w.size
	err := w.resize(AlignUp(wantBytes))
	if errors.Is(err, ErrOutOfMemory) && wantBytes > minBytes {
		err = w.resize(AlignUp(minBytes))
	}
	if err != nil {
		return err
	}
	if w.size != old {
		w.grows++
	}
	return nil
}

// Free gives the workspace's memory back to the device. The workspace can
// be used again afterwards (it grows anew); freeing while borrowed fails.
func (w *Workspace) Free() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.borrowed {
		return fmt.Errorf("accounting: free workspace: %w", ErrWorkspaceBorrowed)
	}
	return w.resize(0)
}
