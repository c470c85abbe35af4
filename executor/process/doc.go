// Package process runs one task's command in its own process group with its
// output in files, and kills the whole group on request: SIGTERM, then
// SIGKILL when the grace period ends, including grandchildren that outlive
// the leader.
package process
