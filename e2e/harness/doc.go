// Package harness is what the end-to-end test packages (e2e, e2e/ha and
// e2e/realmesos) share to drive real processes: waiting for a condition
// with a deadline (Poll, Eventually), a free loopback port, a process with
// its output in a log file that is stopped with SIGTERM and SIGKILL after a
// grace period (Proc), building the binaries under test (Build), packing a
// fixture app (TarGz), HTTP requests with a JSON or raw body (NewRequest,
// Send), reading the files job scripts write (ReadLines) and stopping what
// an embedded agent left running (SandboxProcs, StopEverything).
//
// Go test files of different packages cannot share code, so this is a
// small ordinary package; each test package keeps its own specific helpers
// (its scheduler type, its fixtures, its timeouts) and imports this one.
package harness
