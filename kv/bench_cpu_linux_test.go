//go:build linux

package kv_test

import "syscall"

// threadCPU returns the CPU time, user and system, that the calling OS
// thread has used, in nanoseconds; ok is false when it cannot tell.
func threadCPU() (ns int64, ok bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
