package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ejcloud/elasticjob/internal/pidfd"
)

// pollEvery is how often Kill and Remove look again.
const pollEvery = 5 * time.Millisecond

// Procs lists the processes in g and its descendants (in every hierarchy).
func (g *Group) Procs() []int {
	var out []int
	for _, d := range g.dirs() {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// Kill SIGKILLs every process in g and its descendants until none is left,
// for at most timeout. A fork bomb cannot outrun it for long: the pids
// limit bounds it and every round kills all it finds. It returns how many
// processes it signalled.
func (g *Group) Kill(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	self := os.Getpid()
	killed := 0
	for {
		procs := g.Procs()
		procs = slices.DeleteFunc(procs, func(p int) bool { return p == self })
		if len(procs) == 0 {
			return killed, nil
		}
		if time.Now().After(deadline) {
			return killed, fmt.Errorf("cgroups: %d processes still in %s after %v", len(procs), g.Path(), timeout)
		}
		killed += g.killListed(procs)
		time.Sleep(pollEvery)
	}
}

// pinChunk bounds the pids pinned at once: each pin is a descriptor, and
// a group holds as many processes as its pids.max lets its tenant fork.
const pinChunk = 64

// killListed SIGKILLs those of procs, pids read from g's cgroup.procs,
// that are still in g. A listed process may have exited since, and its
// pid gone to a process outside g (another team's, the host's): each pid
// is pinned (a pidfd) before g is listed again, and signalled through its
// pin only if that listing still holds it, so a signal reaches a process
// that was in g with the pid pinned, or none.
func (g *Group) killListed(procs []int) int {
	killed := 0
	for len(procs) > 0 {
		chunk := procs[:min(pinChunk, len(procs))]
		procs = procs[len(chunk):]
		pins := make(map[int]pidfd.Pin, len(chunk))
		for _, p := range chunk {
			if pin, err := pidfd.Open(p); err == nil {
				pins[p] = pin
			}
		}
		members := map[int]bool{}
		for _, p := range g.Procs() {
			members[p] = true
		}
		for p, pin := range pins {
			if members[p] && pin.Signal(syscall.SIGKILL) == nil {
				killed++
			}
			pin.Close()
		}
	}
	return killed
}

// Remove removes g and its descendants in every hierarchy, deepest first.
// Groups that still hold processes cannot be removed (EBUSY); Remove
// retries them until timeout. A group already gone is not an error.
func (g *Group) Remove(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := g.removeOnce()
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollEvery)
	}
}

func (g *Group) removeOnce() error {
	var errs []error
	for _, d := range g.dirs() {
		var all []string
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		for i := len(all) - 1; i >= 0; i-- { // children after parents in walk order
			if err := syscall.Rmdir(all[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("cgroups: remove %s: %w", all[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// RemoveEmpty removes g's directories, one rmdir per hierarchy, without
// listing them: it fails (EBUSY) where one still holds processes or child
// groups, and leaves that one. A directory already gone is not an error.
// Listing a group (Remove) reads every control file's entry in each
// hierarchy, which costs more than the rmdir itself: this is for a group
// that is expected empty, such as an ended task's.
func (g *Group) RemoveEmpty() error {
	var errs []error
	for _, d := range g.dirs() {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Destroy kills everything in g and removes it. A group that is already
// empty and has no children (a task whose processes have all ended, the
// usual case) is removed at once, one rmdir per hierarchy, without
// listing it; otherwise (EBUSY) its processes are killed first.
func (g *Group) Destroy(timeout time.Duration) error {
	if g.RemoveEmpty() == nil {
		return nil
	}
	if _, err := g.Kill(timeout); err != nil {
		return err
	}
	return g.Remove(timeout)
}

// Children are the names of g's child groups (in the memory hierarchy).
func (g *Group) Children() []string {
	entries, err := os.ReadDir(g.Dir(Memory))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// RemoveStale removes the groups below g (not g itself) that hold nothing
// and were created before cutoff, deepest first, in every hierarchy; a
// group with processes or children cannot be removed (rmdir fails) and is
// left alone. It returns how many groups it removed from the memory
// hierarchy.
func (g *Group) RemoveStale(cutoff time.Time) int {
	n := 0
	for _, d := range g.dirs() {
		var stale []string // dated before any removal: removing a child may touch its parent's mtime
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() || p == d {
				return nil
			}
			if st, err := os.Stat(p); err == nil && st.ModTime().Before(cutoff) {
				stale = append(stale, p)
			}
			return nil
		})
		for i := len(stale) - 1; i >= 0; i-- {
			if syscall.Rmdir(stale[i]) == nil && d == g.Dir(Memory) {
				n++
			}
		}
	}
	return n
}
