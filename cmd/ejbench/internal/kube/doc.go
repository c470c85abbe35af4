// Package kube is ejbench's kube scenario on the real single-node
// Kubernetes: our trigger beside the same pods by hand and as an Indexed
// Job, the scheduler's CPU per pod, pods per second, a cron fire, both
// binding modes, and where a round's time and CPU go.
package kube
