// Package e2e holds the end-to-end tests: both binaries are built, real
// scheduler processes are started on loopback with their embedded
// single-node Mesos master+agent, apps are published, jobs registered and
// triggered, and the tests assert on what the jobs did (files their scripts
// write into a per-test output directory) and on the API's view. TestConformance runs the
// table of behaviours every engine passes (e2e/conformance) on the embedded engine.
//
// Run with `go test -race -count=1 ./e2e/`.
package e2e
