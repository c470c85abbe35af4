package executor

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// Groups tracks the process groups of running jobs (Reaper; nil: none).
type Groups interface {
	Add(pgid int)
	Remove(pgid int)
}

// Reaper is a small helper process (a /bin/sh loop, about 1 MB) that kills the jobs' process groups if
// the executor dies without doing so (SIGKILL, e.g. when the agent or the
// embedded scheduler is killed): a job's direct child dies with the
// executor (PDEATHSIG) but its own children would live on as orphans
// beside the task's failover relaunch. The executor tells the reaper, over
// its stdin, "+pgid" when a job starts and "-pgid" when it has ended; at
// end of input (the executor is gone) the reaper SIGKILLs the groups still
// listed. It runs in its own process group.
type Reaper struct {
	mu  sync.Mutex
	w   io.WriteCloser
	cmd *exec.Cmd
	log *slog.Logger
	err bool // a write failed (logged once)
}

var _ Groups = (*Reaper)(nil)

// reaperScript keeps the list of live groups in $g (" 12 34 ") and kills
// them at end of input.
const reaperScript = `g=" "
while read -r l; do
  case $l in
    +*) g="$g${l#+} " ;;
    -*) p=${l#-}; case $g in *" $p "*) g="${g%% $p *} ${g#* $p }" ;; esac ;;
  esac
done
for p in $g; do kill -9 "-$p" 2>/dev/null; done
`

// StartReaper starts the reaper.
func StartReaper(log *slog.Logger) (*Reaper, error) {
	cmd := exec.Command("/bin/sh", "-c", reaperScript)
	w, err := cmd.StdinPipe() // close-on-exec in the executor: jobs do not inherit it
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start reaper: %w", err)
	}
	return &Reaper{w: w, cmd: cmd, log: log}, nil
}

func (r *Reaper) Add(pgid int)    { r.send('+', pgid) }
func (r *Reaper) Remove(pgid int) { r.send('-', pgid) }

func (r *Reaper) send(op byte, pgid int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := fmt.Fprintf(r.w, "%c%d\n", op, pgid); err != nil && !r.err {
		r.err = true
		r.log.Warn("reaper unreachable: job processes may outlive a killed executor", "err", err)
	}
}

// Close ends the reaper (it has nothing left to kill once the executor's
// tasks have ended).
func (r *Reaper) Close() error {
	r.mu.Lock()
	r.w.Close()
	r.mu.Unlock()
	return r.cmd.Wait()
}

// watchGroup registers a started job's group; unwatchGroup forgets it
// once the job has ended.
func watchGroup(g Groups, pid int) {
	if g != nil {
		g.Add(pid)
	}
}

func unwatchGroup(g Groups, pid int) {
	if g != nil && pid > 0 {
		g.Remove(pid)
	}
}
