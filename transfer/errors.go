package transfer

import "errors"

var (
	// ErrPath means the path asked for cannot move between the two sides.
	ErrPath = errors.New("transfer: path does not fit the endpoints")
	// ErrMismatch means the two sides differ in dtype or shape.
	ErrMismatch = errors.New("transfer: endpoints differ")
	// ErrClosed means the Copier was closed.
	ErrClosed = errors.New("transfer: copier closed")
)
