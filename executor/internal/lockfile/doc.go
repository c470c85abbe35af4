// Package lockfile takes advisory flock(2) locks on files so that several
// executor processes (and several tasks in one executor) can share a cache
// directory without corrupting it.
package lockfile
