package main

import (
	"os/exec"
	"syscall"
	"time"
)

// dieWithParent makes the kernel kill cmd if this program dies without
// stopping it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// block blocks the calling thread in the kernel for at least d.
func block(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
