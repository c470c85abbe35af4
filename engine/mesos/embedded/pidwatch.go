package embedded

import (
	"sync"
	"time"
)

// sameProcess reports whether the process checkpointed as f still runs:
// same boot, and the pid still names a live process started when it was.
func sameProcess(f forked) bool {
	if f.Boot != bootID() {
		return false
	}
	start, running := procStart(f.Pid)
	return running && start == f.Start
}

// exitPoll is how often pollExit looks.
const exitPoll = 500 * time.Millisecond

// pollExit is watchExit by looking every exitPoll.
func pollExit(f forked, onExit func()) (stop func()) {
	stopped := make(chan struct{})
	go func() {
		t := time.NewTicker(exitPoll)
		defer t.Stop()
		for sameProcess(f) {
			select {
			case <-stopped:
				return
			case <-t.C:
			}
		}
		onExit()
	}()
	return sync.OnceFunc(func() { close(stopped) })
}

// total sums the counts of reapAll.
func total(killed map[string]int) int {
	n := 0
	for _, k := range killed {
		n += k
	}
	return n
}
