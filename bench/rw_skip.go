//go:build norwmutex

package main

import "time"

// rwmutexImpl reports that this build leaves out the RWMutex (built with
// -tags norwmutex): scenario 3 is then skipped with a note.
func rwmutexImpl(time.Duration) *Impl { return nil }
