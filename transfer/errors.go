package transfer

import (
	"errors"
	"strings"
)

var (
	// ErrPath means the path asked for cannot move between the two sides.
	ErrPath = errors.New("transfer path does not fit the endpoints")
	// ErrMismatch means the two sides differ in dtype or shape.
	ErrMismatch = errors.New("endpoints differ")
	// ErrClosed means the Copier was closed.
	ErrClosed = errors.New("copier closed")
	// ErrUnknownName means a name given to ParsePath or ParseRoute is not
	// one of theirs.
	ErrUnknownName = errors.New("unknown path or route name")
)

// labelled is an error with a message of its own over the error it wraps:
// errors.Is and errors.As see the wrapped one.
type labelled struct {
	msg string
	err error
}

func (e *labelled) Error() string { return e.msg }
func (e *labelled) Unwrap() error { return e.err }

// within wraps err, an error of this package, under the prefix ("transfer:
// destination"), its own "transfer: " said once: "transfer: destination:
// host side too small: ...", not "transfer: destination: transfer: host
// side too small: ...".
func within(prefix string, err error) error {
	return &labelled{msg: prefix + ": " + strings.TrimPrefix(err.Error(), "transfer: "), err: err}
}
