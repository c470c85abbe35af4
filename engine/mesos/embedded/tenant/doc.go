// Package tenant confines one tenant's executors on the embedded agent:
// each tenant (a namespace of the scheduler) runs as an unprivileged OS
// user of its own, and each executor in a PID and a mount namespace of its
// own, where the agent's work directory, the scheduler's data directory
// and key files are hidden and only the executor's sandbox and its
// tenant's app cache are shown again.
//
// The agent (root) starts Init's binary with CLONE_NEWPID|CLONE_NEWNS and
// a Plan in the environment. Init, pid 1 of the new PID namespace and
// still root, makes every mount private, hides the Plan's paths (an empty
// read-only tmpfs over a directory, /dev/null over a file), binds the
// sandbox and the cache back at their own paths, gives /tmp, /var/tmp
// and /dev/shm fresh tmpfs
// and mounts a /proc of the new PID namespace (the agent starts it in a
// new IPC namespace too). Then, on the thread that forks the executor
// (these are per-thread), it empties the capability bounding set, sets
// no_new_privs and, unless the Plan allows user namespaces, installs a
// seccomp filter that refuses them; it starts the executor as the
// tenant's uid and gid with no supplementary groups, forwards signals to it, reaps every orphan of the namespace and
// exits with the executor's status; its exit kills whatever is left in the
// namespace. Paths keep their names inside, so MESOS_SANDBOX and
// ELASTICJOB_CACHE_DIR mean the same on both sides.
//
// Each scheduler claims its uid range on the host (LockRange), so two
// schedulers' tenants never share a uid.
//
// UIDs are given out from a configured range, one per tenant, lowest free
// first, and recorded in a file of the agent's work directory (Book), so a
// tenant keeps its uid across restarts.
package tenant
