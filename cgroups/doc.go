// Package cgroups drives Linux control groups through their file system,
// in either of the two forms a machine may have: cgroup v2 (one unified
// hierarchy, controllers enabled per subtree in cgroup.subtree_control) or
// cgroup v1 (one hierarchy per controller, e.g. /sys/fs/cgroup/memory).
//
// Detect finds the mounts in /proc/self/mountinfo and picks a mode: v2
// where a cgroup2 file system is mounted with the memory and cpu
// controllers available and the cgroups root can be created, else v1 where
// the memory and cpu hierarchies are mounted and writable, else none (the
// error says why). The pids and cpuacct controllers are used when present.
//
// A Group is one cgroup, named by its path relative to the hierarchy root
// (the same path in every v1 hierarchy). It is created, given Limits
// (memory, CPU shares/weight and CFS quota, process count), entered by a
// process before it runs anything, read (Stats: usage, OOM kills,
// throttling), killed (every process in it and its descendants) and
// removed.
//
// Entering: in v2 (Linux 5.7+) a process is started right in the group
// (CloneDir, for clone3 CLONE_INTO_CGROUP). Otherwise Argv wraps the command
// in a tiny /bin/sh prelude that moves itself into the group and execs it;
// in v1 the prelude writes 0 to each hierarchy's tasks file, a
// single-thread migration that skips the kernel's global threadgroup lock
// (moving a whole process through cgroup.procs waits for an RCU grace
// period, ~10-30 ms per task start on a busy machine, and stalls every
// fork on the machine meanwhile).
//
// The embedded agent puts each executor in a container group with the
// executor's and its tasks' resources and the executor itself in a leaf
// child; the executor puts each task in a child of the container with the
// task's own limits, so the kernel's OOM killer and the pids limit hit the
// offending task, not its siblings or the executor.
package cgroups
