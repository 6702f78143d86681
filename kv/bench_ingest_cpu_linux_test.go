//go:build linux

package kv_test

import "syscall"

// processCPU returns the CPU time, user and system, that the process has
// used, in nanoseconds; ok is false when it cannot tell.
func processCPU() (ns int64, ok bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
