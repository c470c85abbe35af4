//go:build linux

package embedded

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// procStart reads /proc/PID/stat: the process's start time in clock ticks
// since boot, and whether it runs (it exists and is not a zombie).
func procStart(pid int) (start uint64, running bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:]) // from field 3, the state; field 22 is the start time
	if len(f) < 20 {
		return 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, false
	}
	return start, f[0] != "Z" && f[0] != "X"
}

// bootID names this boot of the machine.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// watchExit calls onExit, once and in a goroutine of its own, when the
// process f ends; stop ends the watch without calling it. The process
// need not be a child of this one (an executor an earlier run of the agent
// started): its pidfd becomes readable when it exits, which the runtime's
// poller waits for.
func watchExit(f forked, onExit func()) (stop func()) {
	fd, err := unix.PidfdOpen(f.Pid, 0)
	if errors.Is(err, unix.ESRCH) {
		go onExit()
		return func() {}
	}
	if err == nil {
		err = unix.SetNonblock(fd, true) // so that os.NewFile hands it to the poller
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		return pollExit(f, onExit) // no pidfd (Linux before 5.3)
	}
	file := os.NewFile(uintptr(fd), "pidfd")
	rc, err := file.SyscallConn()
	if err != nil {
		file.Close()
		return pollExit(f, onExit)
	}
	if !sameProcess(f) { // the pid was another process's by the time it was opened
		file.Close()
		go onExit()
		return func() {}
	}
	stopped := make(chan struct{})
	go func() {
		err := rc.Read(func(fd uintptr) bool {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return err == nil && n > 0
		})
		file.Close()
		select {
		case <-stopped:
			return
		default:
		}
		if err == nil {
			onExit()
		}
	}()
	return sync.OnceFunc(func() {
		close(stopped)
		file.Close()
	})
}
