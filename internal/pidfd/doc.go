// Package pidfd signals processes by what their pids named when they were
// pinned, not when the signal is sent. Root kills a tenant's processes
// from a list it read (a cgroup's cgroup.procs, /proc): between the read
// and kill(2) a listed process may exit and its pid go to another
// process, another team's or the host's, which kill(2) would then hit. A
// pid is pinned with pidfd_open(2) and signalled through that descriptor
// (pidfd_send_signal(2)), which reaches the pinned process or, once it
// has exited, nothing (ESRCH). The caller checks what made the pid one
// to kill (its group, its environment) after pinning it: when the pinned
// process is still alive at the signal, the pid named it at that check
// too, as a pid is not reused while its process lives.
//
// Where the kernel has no pidfd (Linux before 5.3) signals go by pid, as
// before, and the gap is there: Supported says which.
package pidfd
