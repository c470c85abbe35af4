package cgroups

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ejcloud/elasticjob/internal/sysfile"
)

// Group is one cgroup, by its path below the hierarchy root. It may not
// exist yet (Create).
type Group struct {
	h   *Hierarchy
	rel string // slash-separated, no leading slash; "" is the root

	mu      sync.Mutex
	written map[string]string // control file → the value last written successfully
}

// Group returns the group at rel (e.g. "elasticjob/S0/c1") below the root.
func (h *Hierarchy) Group(rel string) *Group {
	return &Group{h: h, rel: strings.Trim(path.Clean("/"+rel), "/")}
}

// Path is the group's path below the hierarchy root, with a leading slash
// as /proc/<pid>/cgroup writes it.
func (g *Group) Path() string { return "/" + g.rel }

// Hierarchy is the group's hierarchy.
func (g *Group) Hierarchy() *Hierarchy { return g.h }

// Child is the group name below g (not created).
func (g *Group) Child(name string) *Group { return g.h.Group(path.Join(g.rel, name)) }

// Dir is the group's directory for controller c.
func (g *Group) Dir(c string) string { return filepath.Join(g.h.dirs[c], filepath.FromSlash(g.rel)) }

// dirs are the group's distinct directories (one per v1 hierarchy, one in v2).
func (g *Group) dirs() []string {
	var out []string
	for _, c := range g.h.controllers {
		if d := g.Dir(c); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Create makes the group (and missing parents) in every hierarchy. In v2
// the parent's subtree gets the controllers enabled first.
func (g *Group) Create() error {
	if g.h.mode == V2 && g.rel != "" {
		if err := g.h.Group(path.Dir(g.rel)).Create(); err != nil {
			return err
		}
		if err := g.h.Group(path.Dir(g.rel)).enableSubtree(); err != nil {
			return err
		}
	}
	for _, d := range g.dirs() {
		err := os.Mkdir(d, 0o755) // the usual case: the parent exists (one syscall, not MkdirAll's stats)
		if errors.Is(err, fs.ErrNotExist) {
			err = os.MkdirAll(d, 0o755)
		}
		if err == nil {
			g.made(d)
			continue
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("cgroups: create %s: %w", d, err)
		}
	}
	return nil
}

// made notes that g's directory d was just made: what was written to the
// files of its controllers before is gone, and their CPU bandwidth is the
// kernel's default for a new group (v1's shares of one CPU, v2's weight
// 100, no quota, the default period), which SetLimits then does not write
// again: a task's group, made at each
// launch, is written only what it does not hold already.
func (g *Group) made(d string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range g.h.controllers {
		if g.Dir(c) != d {
			continue
		}
		for k := range g.written {
			if strings.HasPrefix(k, c+"/") {
				delete(g.written, k)
			}
		}
		if c != CPU {
			continue
		}
		if g.written == nil {
			g.written = map[string]string{}
		}
		if g.h.mode == V1 {
			g.written[CPU+"/cpu.shares"] = itoa(Shares(1))
			g.written[CPU+"/cpu.cfs_period_us"] = itoa(CFSPeriod)
			g.written[CPU+"/cpu.cfs_quota_us"] = "-1"
		} else {
			g.written[CPU+"/cpu.weight"] = "100" // the kernel's, which no whole number of CPUs maps to
			g.written[CPU+"/cpu.max"] = "max " + itoa(CFSPeriod)
		}
	}
}

// enableSubtree enables the controllers in use for g's children (v2).
func (g *Group) enableSubtree() error {
	var add []string
	for _, c := range g.h.controllers {
		add = append(add, "+"+c)
	}
	return write(g.Dir(Memory), "cgroup.subtree_control", strings.Join(add, " "))
}

// Exists reports whether the group's directory exists (in the memory
// hierarchy).
func (g *Group) Exists() bool {
	st, err := os.Stat(g.Dir(Memory))
	return err == nil && st.IsDir()
}

func write(dir, file, value string) error {
	p := filepath.Join(dir, file)
	if err := sysfile.Write(p, value, true); err != nil {
		return fmt.Errorf("cgroups: write %q: %w", value, err)
	}
	return nil
}

// joinFiles are the files a process writes to in order to join the group,
// and what it writes. In v1 a single-threaded process moves its one thread
// by writing 0 to each hierarchy's tasks file: a single-thread migration of
// the writer skips the kernel's global cgroup_threadgroup_rwsem, whose
// write side waits for an RCU grace period (~10 ms on an idle, more on a
// busy machine) and stalls every fork meanwhile, as a cgroup.procs write
// does. In v2 the pid goes to cgroup.procs (tasks files do not exist).
func (g *Group) joinFiles() (value string, files []string) {
	if g.h.mode == V1 {
		return "0", g.TasksFiles()
	}
	return "$$", []string{filepath.Join(g.Dir(Memory), "cgroup.procs")}
}

// TasksFiles are g's v1 tasks files, one per hierarchy: 0 written to each
// moves the writing thread alone into g (a single-thread migration, see
// joinFiles). nil in v2, where domain groups have no tasks files.
func (g *Group) TasksFiles() []string {
	if g.h.mode != V1 {
		return nil
	}
	var files []string
	for _, d := range g.dirs() {
		files = append(files, filepath.Join(d, "tasks"))
	}
	return files
}

// SelfTasksFiles are the v1 tasks files of the groups the calling process
// is in, one per hierarchy of h in use, read from procCgroup
// (/proc/self/cgroup when ""): where a thread that stepped into another
// group goes back to. An error in v2 or when a controller is not listed.
func (h *Hierarchy) SelfTasksFiles(procCgroup string) ([]string, error) {
	if h.mode != V1 {
		return nil, fmt.Errorf("cgroups: tasks files are v1 only")
	}
	if procCgroup == "" {
		procCgroup = "/proc/self/cgroup"
	}
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	paths := map[string]string{} // controller → path
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	var files []string
	for _, c := range h.controllers {
		p, ok := paths[c]
		if !ok {
			return nil, fmt.Errorf("cgroups: %s lists no %s group", procCgroup, c)
		}
		f := filepath.Join(h.dirs[c], filepath.FromSlash(strings.TrimPrefix(p, "/")), "tasks")
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	return files, nil
}

// CloneDir is the directory a process can be started in directly with
// clone3(CLONE_INTO_CGROUP) (exec SysProcAttr.UseCgroupFD), which needs no
// migration at all: in v2 on Linux 5.7 or later; "" otherwise (use Argv).
func (g *Group) CloneDir() string {
	if g.h.mode != V2 || !cloneIntoCgroup() {
		return ""
	}
	return g.Dir(Memory)
}

// prelude joins the group and execs the command:
// sh -c prelude name VALUE N file1..fileN argv...
const prelude = `v=$1; [ "$v" = '$$' ] && v=$$; n=$2; shift 2; ` +
	`while [ "$n" -gt 0 ]; do echo "$v" > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"`

// Argv wraps argv (program path first) so that the process enters g before
// it runs anything: /bin/sh (single-threaded) moves itself into g and then
// execs argv (same pid, same open files, same environment). If joining
// fails the process exits with status 125 before running argv.
func (g *Group) Argv(argv []string) []string {
	v, files := g.joinFiles()
	out := []string{"/bin/sh", "-c", prelude, "cgroup-exec", v, strconv.Itoa(len(files))}
	out = append(out, files...)
	return append(out, argv...)
}

// ChownFiles gives uid and gid g's named files that exist (e.g. "tasks",
// "cgroup.procs": so that they may move their own processes in), in every
// hierarchy. The directories and the limit files stay root's: a tenant
// can neither raise a limit nor make a group of its own below g where it
// could set one.
func (g *Group) ChownFiles(uid, gid int, files ...string) error {
	for _, d := range g.dirs() {
		for _, f := range files {
			if err := os.Chown(filepath.Join(d, f), uid, gid); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("cgroups: chown %s: %w", filepath.Join(d, f), err)
			}
		}
	}
	return nil
}

// Unlisted makes g's directories mode 0711 in every hierarchy: anyone may
// still reach a group below it by its name (a tenant's executor its own
// tasks' groups), but only the owner lists the names, which name other
// tenants' containers, tasks and jobs.
func (g *Group) Unlisted() error {
	for _, d := range g.dirs() {
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("cgroups: chmod %s: %w", d, err)
		}
	}
	return nil
}

// TaskName is the name of a task's group below its container: its id when
// short enough, else a prefix of it and a hash. The agent makes it and the
// executor finds it by this name.
func TaskName(taskID string) string {
	name := "task-" + strings.ReplaceAll(taskID, "/", "_")
	if len(name) <= 200 {
		return name
	}
	sum := sha256.Sum256([]byte(taskID))
	return name[:180] + "-" + hex.EncodeToString(sum[:8])
}
