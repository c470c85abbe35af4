// Package engine is the vocabulary between the scheduler and a cluster
// engine: the resources on offer, the tasks to launch, the status updates
// that come back, and the calls the scheduler makes (Driver) and receives
// (Handler). Mesos (package mesos: the embedded single-node master and
// agent, or a real cluster) is one engine; Kubernetes is the other. The
// launch decision does not know which one it talks to.
package engine
