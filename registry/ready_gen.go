package registry

import (
	"context"
	"errors"

	"github.com/ejcloud/elasticjob/queue"
	"github.com/ejcloud/elasticjob/store"
)

// readyGenPath holds one node per job, /state/ready_gen/{job}, whose
// version numbers the generations of the job's ready entry. Every store
// numbers a node made anew from version 0 again (as ZooKeeper does, and
// ZooKeeper's multi can check nothing but a version), so a write
// conditional only on the version of the entry it read could land on an
// entry deleted and made anew since, at the same version: it would put
// back an execution that launched meanwhile (it runs twice) and drop what
// the new entry held. The generation node is never deleted with the
// entry, so its version only grows:
//
//   - a write that makes the entry reads the node and commits with a
//     Check of the version it read (a Create of the node where it has
//     none), recording that version plus one in the entry (queue.Ready.Gen);
//   - a write that deletes the entry bumps the node in the same commit
//     (a Set on the version the entry records, or a Put);
//   - so while an entry lives the node's version is its Gen less one, and
//     every write that rewrites or deletes an entry it read commits with
//     a Check (or the bump) of that version: an entry made anew since has
//     a later generation, and the write fails to be made again from it.
//
// The generation travels in the entry's value, read with it in one read:
// no second read that a cache could answer from a later state than the
// entry's. The hot writes pay one op each: a fire that makes an entry a
// Check, a launch that takes the last execution a Set of a small node.
//
// An entry without a generation (written before this layout: an earlier
// version, the original's decimal count) is taken up by the next write
// that reads it (its generation recorded as for a new entry); a launch,
// which writes from its view without a read, takes from it on its
// version alone, as before. A job's node goes with its gate (PruneGates),
// not with the job: a write in flight for a job deleted and registered
// again under its name fails its check as a fire does on the gate.
const readyGenPath = "/state/ready_gen"

// readyGenOf is job's generation node.
func readyGenOf(job string) string { return readyGenPath + "/" + job }

// newGen is the generation of an entry job's next write makes, and the op
// that makes that write conditional on it (the node's version as read, or
// its creation when it has none).
func newGen(ctx context.Context, kv store.KV, job string) (int64, store.Op, error) {
	p := readyGenOf(job)
	n, err := kv.Get(ctx, p)
	if errors.Is(err, store.ErrNotFound) {
		return 1, store.Create(p, nil), nil
	}
	if err != nil {
		return 0, store.Op{}, err
	}
	return n.Version + 1, store.Check(p, n.Version), nil
}

// keepGen is the op that makes a rewrite of rd, read from kv, conditional
// on its generation; an entry without one takes up the generation a new
// entry would get (rd.Gen is set).
func keepGen(ctx context.Context, kv store.KV, rd *queue.Ready) (store.Op, error) {
	if rd.Gen > 0 {
		return store.Check(readyGenOf(rd.Job), rd.Gen-1), nil
	}
	gen, op, err := newGen(ctx, kv, rd.Job)
	rd.Gen = gen
	return op, err
}

// endGen is the op that goes with the deletion of rd: its generation
// ends, conditional on it being rd's (rd without one: the node is bumped
// whatever its version).
func endGen(rd queue.Ready) store.Op {
	if rd.Gen > 0 {
		return store.Set(readyGenOf(rd.Job), nil, rd.Gen-1)
	}
	return bumpGen(rd.Job)
}

// bumpGen ends the generation of job's entry, whatever it is: it goes
// with a deletion of the entry on no version.
func bumpGen(job string) store.Op { return store.Put(readyGenOf(job), nil) }

// readyDeleteOps deletes job's ready entry whatever its version, ending
// its generation.
func readyDeleteOps(job string) []store.Op {
	return []store.Op{store.Delete(ReadyPath+"/"+job, store.AnyVersion), bumpGen(job)}
}
