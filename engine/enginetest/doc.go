// Package enginetest is the engine contract written once: checks of what the scheduler
// relies on from an engine.Driver and its event stream (subscription and offers, a launch
// running to its terminal state, kill, explicit and implicit reconciliation, decline and
// revive, the declared capabilities honoured), run by each engine's own tests on an
// in-process subject: the embedded Mesos master with simulated agents (engine/mesos) and
// engine/kube over client-go's fake clientset. The shape follows Nomad's
// plugins/drivers/testutils and litestream's RunWithReplicaClient: the suite owns the
// checks, a Factory owns how to start a fresh engine and how to play its executor.
//
// It complements the end-to-end conformance table (e2e/conformance): that one drives the
// whole scheduler binary through the API on real engines; this one drives the engine seam
// alone, in the unit tier, with no process and no network beyond loopback.
package enginetest
