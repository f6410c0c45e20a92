//go:build !linux

package main

import (
	"os/exec"
	"time"
)

// dieWithParent is a no-op where the kernel cannot tie a child's life to its
// parent's; the signal handler still stops the servers on an interrupt.
func dieWithParent(*exec.Cmd) {}

// block waits at least d. Here it is time.Sleep, which may round a short d up
// to the timer resolution.
func block(d time.Duration) { time.Sleep(d) }
