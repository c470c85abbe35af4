// Package taskcost is ejbench's taskcost scenario: the scheduler CPU one
// finished task costs on the embedded engine with real processes, at
// saturation, split by stage of the task's path (trigger, producer, store
// commits, round and offers, the embedded master and agent, isolation,
// executor talk, history, metrics, HTTP and encoding, runtime), read from
// the scheduler's CPU profile; the code before alternately with -bin's
// when -taskcost-before is given.
package taskcost
