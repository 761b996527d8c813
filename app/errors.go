package app

import (
	"errors"
	"fmt"
)

// Error codes say which kind of failure a user-facing Error is.
const (
	EInvalid      = "invalid"      // the request or a file is malformed
	EUnauthorized = "unauthorized" // the actor may not do this
	EConflict     = "conflict"     // another task holds the issue
	ENotFound     = "not_found"    // something named does not exist
	EPolicy       = "policy"       // the repository's policy refuses it
	EBudget       = "budget"       // a limit ran out
	EInternal     = "internal"     // ours to fix, not the user's
)

// Error is a failure whose Message may be shown on GitHub as is. Anything
// that is not an *Error is shown as "Internal error." so that what agentbot
// posts never leaks internals; operators see the whole chain in the logs.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// EInternal.
func ErrorCode(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the text a user may see for err.
func ErrorMessage(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Message
	}
	return "Internal error."
}
