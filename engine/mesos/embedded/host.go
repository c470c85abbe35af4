package embedded

import (
	"log/slog"
	"sync"
)

// host is the agent's half of the cluster: what runs on this machine (or,
// in simulation mode, in-process): the live executors by sandbox, the
// sandboxes of earlier runs, cgroup isolation, the checkpoint and what a
// restart recovered from it. The master half (master.go) charges the
// executors' and tasks' resources to their agents; the processes
// themselves are started, watched and ended by process.go, executor.go
// and recover.go.
//
// Cluster.mu guards it, but for gcMu (one garbage collection at a time)
// and what is set once by New and Start (ck, boot, iso).
type host struct {
	cfg  Config       // as New completed it
	log  *slog.Logger // the cluster's
	lock *sync.Mutex  // Cluster.mu, taken by the executors' timers
	iso  *isolation   // set by Start
	ten  *tenancy     // set by Start; nil: executors run as this process's user
	// cacheRoot holds the tenants' app caches (Tenancy.CacheDir as Start
	// made it absolute; "": none), measured with their sandboxes.
	cacheRoot string
	live      map[string]*executor // executors not terminated, by sandbox
	// liveTokens counts the live executors by their token's hash, and
	// legacyLive the live ones an earlier version started without a token:
	// what the executor API asks of every call before it reads its body
	// (exec_api.go's admit), kept by register and executorEnded beside
	// live so that no call scans the executors.
	liveTokens map[tokenHash]int
	legacyLive int
	archived   map[string][]archived // terminated runs known by sandbox only, per framework
	gcMu       sync.Mutex            // serializes CollectGarbage

	// Checkpoint and recovery (checkpoint.go, recover.go): ck is nil in
	// simulation mode; boot is this machine's boot id.
	ck            *checkpoint
	boot          string
	recovering    bool          // recover is rebuilding the earlier run
	recoveredLive int           // executors of the earlier run found running
	cleaned       chan struct{} // see Cleaned
}

func newHost(cfg Config, log *slog.Logger, lock *sync.Mutex) host {
	return host{cfg: cfg, log: log, lock: lock, live: map[string]*executor{}, liveTokens: map[tokenHash]int{}, archived: map[string][]archived{}, cleaned: make(chan struct{}), boot: bootID()}
}

// countLive counts executor e in (delta 1) or out of (delta -1) the live
// executors' tokens: by its token's hash, or among those without a token
// when an earlier version started it. An executor's token and recovered
// mark are set before it is registered and never change.
func (h *host) countLive(e *executor, delta int) {
	switch {
	case e.token != (tokenHash{}):
		if n := h.liveTokens[e.token] + delta; n > 0 {
			h.liveTokens[e.token] = n
		} else {
			delete(h.liveTokens, e.token)
		}
	case e.recovered:
		h.legacyLive += delta
	}
}

// archive keeps a terminated executor that leaves the completed list.
func (h *host) archive(e *executor) {
	a := archived{fwID: e.fw.id, execID: e.id, containerID: e.containerID, dir: e.dir, ended: e.ended}
	list := append(h.archived[a.fwID], a)
	if len(list) > maxArchived {
		list = list[1:]
	}
	h.archived[a.fwID] = list
}

// closeCleaned closes Cleaned, once.
func (h *host) closeCleaned() {
	select {
	case <-h.cleaned:
	default:
		close(h.cleaned)
	}
}
