//go:build unix && !linux

package embedded

import "syscall"

// procStart reports whether pid runs; the start time is unknown here.
func procStart(pid int) (uint64, bool) { return 0, syscall.Kill(pid, 0) == nil }

func bootID() string { return "" }

func watchExit(f forked, onExit func()) func() { return pollExit(f, onExit) }
