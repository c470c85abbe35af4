// Package hostile is the hostile-team test tier: a team with nothing but an
// edit role in its own namespace attacks another team's work and the
// scheduler, on the default engine as root with tenant isolation on, and
// every row of the suite asserts that nothing crossed the boundary.
//
// The world (world_test.go): one scheduler as root with tenant isolation
// on, a secrets key, a metrics token, an admin; team pay holds two secrets
// (one as an environment variable, one as a file) and keeps a task running
// with them; team search holds only an API token with the edit role in its
// own namespace. search's jobs are the attacker: their tasks try each
// attack class from inside (links planted in their own sandbox for the
// agent to follow, cgroup writes, setuid programs, user and IPC namespaces,
// other processes, the scheduler's files) and report one ROW line per try;
// the test then asks the API, as search, for everything the links point at
// and walks every route with pay's names.
//
// Run it with `go test -race -count=1 -tags e2e ./e2e/hostile/` as root
// (make test does); without root every test skips, saying so.
// docs/tenancy.md's threat model names what each row defends.
package hostile
