package telemetry

// Sentinel returns a new error whose text is msg, to be compared with
// errors.Is, and whose error.type in spans is typ: an error that wraps it
// reports typ rather than the Go type of the wrapper.
func Sentinel(msg, typ string) error { return &sentinel{msg: msg, typ: typ} }

type sentinel struct{ msg, typ string }

func (e *sentinel) Error() string { return e.msg }

// ErrorType returns the error.type of the sentinel (see semconv.ErrorType).
func (e *sentinel) ErrorType() string { return e.typ }
