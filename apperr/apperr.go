// Package apperr is the service's one error type: a machine-readable code and
// a sentence for the person who made the request. The store and the formulas
// return it; the server maps its code to an HTTP status in one place.
package apperr

import (
	"errors"
	"fmt"
)

// Code classifies an error for the client.
type Code string

// The codes, and what the client should do about each.
const (
	Invalid      Code = "invalid"      // fix the request
	Unauthorized Code = "unauthorized" // send a valid token
	Forbidden    Code = "forbidden"    // ask for a higher role
	NotFound     Code = "not_found"    // no such thing here
	Conflict     Code = "conflict"     // the resource's state forbids it
	TooLarge     Code = "too_large"    // send less
	RateLimited  Code = "rate_limited" // slow down
	Unavailable  Code = "unavailable"  // retry later
	Internal     Code = "internal"     // our fault
)

// Error is an error a client can act on.
type Error struct {
	Code    Code
	Message string         // one sentence, safe to show to the client
	Details map[string]any // optional structured context, shown to the client
	Err     error          // the cause, for the log only
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error whose cause is err, kept for the log.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf returns the code of the first Error in err's chain, or Internal.
func CodeOf(err error) Code {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return Internal
}
