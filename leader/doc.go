// Package leader is the leadership lifecycle of a scheduler instance:
// for every term the election hands out, the catch-up barrier (the
// registry copy holds every write of the terms before), the term's
// registry fenced by it, the term's loops started under its context, and
// the term's end — the first loop that fails ends it, and the next term
// starts only once every loop of this one has stopped. The election
// itself is package election; what runs inside a term (the scheduler, the
// engine's client, the workflow engine, the history collector) is handed
// in by the process (cmd/scheduler).
package leader
