// Package artifacts serves the files Mesos agents fetch from the scheduler itself (today the
// executor binary), so nothing has to be installed on agents.
//
// Files are content-addressed: Add snapshots a file into a directory under its sha256 and
// serves it at Prefix+"{kind}/{sha256}/{name}" (e.g. /artifacts/executor/9f86…/elasticjob-executor).
// The bytes behind a URL never change — a rebuilt binary gets a new hash and a new URL — so the
// responses are cacheable forever (Cache-Control immutable, ETag = the hash), the Mesos fetcher
// cache may keep them (CommandInfo.URI cache=true), and no authentication is needed for what is
// a public binary. The name is the last path segment so that the fetcher, which names the
// sandbox file after it, leaves an executable called {name} in the sandbox.
//
// The snapshot (a copy made once at start, written to a temporary file and renamed) keeps the
// served bytes equal to the hash even if the original file is replaced while the scheduler runs.
package artifacts
