// Package misuse holds the misuse matrix: every primitive fed bad input and
// misused the ways callers get it wrong, each case checked for a clear error,
// no panic, and nothing left held. It has no code of its own; see
// misuse_test.go.
package misuse
