// Package guard keeps a task's processes from outliving their executor.
//
// Each task runs in a process group of its own, so when an executor dies
// outright (SIGKILL, or its agent — the embedded one lives in the
// scheduler process — dies and takes it along), the kernel kills nothing of
// its tasks: a shell's children would run on as orphans, beside the
// failover relaunch of the same shard. The guardian is a small companion
// process the executor starts first: the executor tells it each task's
// process group as it starts and ends; when the executor goes away (the
// guardian gets SIGTERM through its parent-death signal, its parent
// changes, or its stdin closes) it kills every group it was told of, then
// exits.
//
// Protocol on the guardian's stdin: "+PGID\n" watches a group, "-PGID\n"
// forgets it; the guardian echoes each line on its stdout once applied, so
// a group is protected before its task's job starts.
package guard

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Arg is the first argument that turns the executor binary into a guardian.
const Arg = "__guard"

// Run is the guardian's main: it returns when the executor is gone, after
// killing the watched groups.
func Run(stdin io.Reader, stdout io.Writer, parent int) {
	var mu sync.Mutex
	groups := map[int]bool{}
	done := make(chan struct{})
	var once sync.Once
	finish := func() { once.Do(func() { close(done) }) }
	go func() { // the executor's messages; EOF means it exited
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			pgid, err := strconv.Atoi(strings.TrimLeft(line, "+-"))
			if err != nil || pgid <= 1 {
				continue
			}
			mu.Lock()
			if strings.HasPrefix(line, "-") {
				delete(groups, pgid)
			} else {
				groups[pgid] = true
			}
			mu.Unlock()
			_, _ = io.WriteString(stdout, line+"\n")
		}
		finish()
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
		case <-sigs:
		case <-tick.C:
			if os.Getppid() == parent {
				continue // the parent-death signal is per thread in Go: check the parent too
			}
		}
		break
	}
	mu.Lock()
	defer mu.Unlock()
	for pgid := range groups {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// Guardian is the executor's handle on its guardian process.
type Guardian struct {
	mu  sync.Mutex
	w   io.WriteCloser
	r   *bufio.Reader
	cmd *exec.Cmd
}

// Start launches self (the executor binary) as a guardian.
func Start(self string) (*Guardian, error) {
	cmd := exec.Command(self, Arg, strconv.Itoa(os.Getpid()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	// The parent-death signal follows the thread that forked, not the
	// process: fork from a thread that lives as long as the executor.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		started <- cmd.Start()
		select {} // keep the thread (and so the guardian's parent) alive
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("guard: start %s: %w", self, err)
	}
	return &Guardian{w: w, r: bufio.NewReader(out), cmd: cmd}, nil
}

// send writes one line and waits for the guardian's echo (bounded: a
// guardian that stopped answering is not waited for).
func (g *Guardian) send(prefix string, pgid int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := fmt.Fprintf(g.w, "%s%d\n", prefix, pgid); err != nil {
		return
	}
	done := make(chan struct{})
	go func() { _, _ = g.r.ReadString('\n'); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
}

// Watch asks the guardian to kill group pgid if the executor dies.
func (g *Guardian) Watch(pgid int) { g.send("+", pgid) }

// Forget tells the guardian a group has ended.
func (g *Guardian) Forget(pgid int) { g.send("-", pgid) }

// Close ends the guardian (it kills whatever is still watched).
func (g *Guardian) Close() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.w.Close()
	go func() { _ = g.cmd.Wait() }()
	return err
}

// Main runs the guardian when args ask for it; it reports whether they did.
func Main(args []string) bool {
	if len(args) < 2 || args[0] != Arg {
		return false
	}
	parent, _ := strconv.Atoi(args[1])
	Run(os.Stdin, os.Stdout, parent)
	return true
}
