//go:build linux

package embedded

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A file a task has removed while one of its processes still holds it open (or mapped)
// keeps its blocks on the disk and appears in no directory: du, which walks the sandbox,
// never sees it. A task could so write past its sandbox's limit and its namespace's cap
// unseen, and fill the disk while another team's sandbox, the largest the watcher sees,
// is stopped for the headroom. So the watcher also counts, for each sandbox, the removed
// files on its file system that the processes of its container hold: through their
// descriptors (/proc/PID/fd) and their mappings (/proc/PID/map_files), each stat'ed, never
// opened.

// heldBudget bounds the descriptors and mappings one pass looks at per container: a task
// can open or map more than any bound, so a container past it is treated as one that
// cannot be measured (over its limit), as a sandbox past duBudget is.
const heldBudget = 1_000_000

// containerProcs lists, in one pass over /proc, the processes of each run's container, by
// its sandbox: a confined executor's are those of its own PID namespace (which no task can
// leave); an unconfined one's, those whose MESOS_DIRECTORY is its sandbox, as reap finds
// them, and the executor itself.
func containerProcs(runs []measured) map[string][]int {
	own, _ := pidNS(os.Getpid())
	byNS := map[uint64]string{}
	byEnv := map[string]bool{}
	out := map[string][]int{}
	for _, r := range runs {
		if ns, err := pidNS(r.pid); err == nil && ns != own {
			byNS[ns] = r.dir
		} else {
			byEnv[r.dir] = true
			out[r.dir] = append(out[r.dir], r.pid)
		}
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if ns, err := pidNS(pid); err == nil && byNS[ns] != "" {
			out[byNS[ns]] = append(out[byNS[ns]], pid)
			continue
		}
		if len(byEnv) == 0 {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if dir, ok := sandboxOf(env); ok && byEnv[dir] && !slices.Contains(out[dir], pid) {
			out[dir] = append(out[dir], pid)
		}
	}
	return out
}

// pidNS is the inode of pid's PID namespace.
func pidNS(pid int) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/pid", &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// held is what the removed files on dir's file system that pids hold open or mapped take
// on disk (each file once). unmeasured says why the count stopped short (more than
// heldBudget descriptors and mappings); bytes is then a lower bound.
func held(dir string, pids []int) (bytes int64, unmeasured string) {
	var root unix.Stat_t
	if unix.Stat(dir, &root) != nil {
		return 0, ""
	}
	seen := map[uint64]bool{}
	left := heldBudget
	for _, pid := range pids {
		for _, sub := range []string{"fd", "map_files"} {
			p := "/proc/" + strconv.Itoa(pid) + "/" + sub
			d, err := os.Open(p)
			if err != nil {
				continue // gone, or no map_files (an old kernel)
			}
			for {
				names, err := d.Readdirnames(256)
				for _, n := range names {
					if left--; left < 0 {
						d.Close()
						return bytes, fmt.Sprintf("more than %d open files and mappings", heldBudget)
					}
					// Only what the kernel names removed is stat'ed: a magic link's text is the
					// kernel's record of the path, read without calling into the file's file
					// system, so a task's files still linked (du counts them) or on a file
					// system whose server it runs are never touched.
					if l, err := os.Readlink(p + "/" + n); err != nil || !strings.HasSuffix(l, " (deleted)") {
						continue
					}
					var st unix.Statx_t
					// statx follows the magic link to the file itself without opening it,
					// and with the attributes cached (no round trip to a network file
					// system's server, which a task's open file could make hang).
					if unix.Statx(unix.AT_FDCWD, p+"/"+n, unix.AT_STATX_DONT_SYNC, unix.STATX_TYPE|unix.STATX_NLINK|unix.STATX_INO|unix.STATX_BLOCKS, &st) != nil ||
						uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG || st.Nlink != 0 ||
						unix.Mkdev(st.Dev_major, st.Dev_minor) != root.Dev || seen[st.Ino] {
						continue
					}
					seen[st.Ino] = true
					bytes += int64(st.Blocks) * 512
				}
				if err != nil {
					break // the end, or the process ended meanwhile
				}
			}
			d.Close()
		}
	}
	return bytes, ""
}
