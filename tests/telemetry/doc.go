// Package telemetry holds the tests of the library's OpenTelemetry
// instrumentation that record spans and metrics with the OpenTelemetry SDK:
// tests/telemetry/X holds those of the library's package X (mutex,
// internal/telemetry, ...), and this directory those of the root package's
// example. They live in the tests module so that the library's go.mod does
// not require the SDK; teltest is their recorder. It has no code of its own;
// see the *_test.go files.
//
// It is a package of the nested module github.com/redisync/redisync/tests
// (directory tests/telemetry), run by the README's test command; on its own,
// from the repository's root:
//
//	go test -C tests -race -count=1 ./telemetry/...
package telemetry
