// Package memory is the in-memory store.KV used by tests: a mutex, a map of
// nodes and an index of children. Commit applies ops directly and undoes
// them on the first failing op, so a batch is all or nothing.
//
// The package also exports the pieces every store.KV implementation needs
// and that package store (being interface-only) does not hold: path
// validation (ValidatePath, Parent, Under, CheckOps) and Hub, the in-process
// watch fan-out with bounded per-watcher queues that turns an overflow into
// one store.EventResync instead of blocking the writer. store/sqlite
// uses both.
package memory
