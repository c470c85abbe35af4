// Package deadline raises the alerts of jobs' deadlines (startDeadlineSeconds,
// runDeadlineSeconds, runDeadlineAt): Check is pure (the registry's
// state and a time in, the alerts due out, each with a deterministic key);
// Watcher is the leader loop that reads the state, records each alert's
// key in the registry before it tells anyone (so a takeover neither drops
// nor repeats one) and hands it to its sinks: the history, the metric,
// the job's webhook (observe.Deadlines: the vocabulary the sinks share
// sits in package observe, below history and metrics, so that they need
// not import this loop). The Watcher also keeps, for each waiting execution,
// the start estimate it first gave (estimate.Starts) and observes its
// error when the execution starts.
package deadline
